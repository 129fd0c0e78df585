import NearbyCore

extension Handshake {
  /// Message 1 (responder): the initiator's versions, ciphers and commitment. Answers with
  /// message 2: our ephemeral key and ciphers.
  mutating func receiveCommit(_ message: [UInt8], into output: inout Output) throws(HandshakeError) {
    let commit = try HandshakeMessages.Commit(decoding: message)
    guard (commit.minimumVersion...commit.maximumVersion).contains(SecureProtocol.version) else {
      throw .noCommonVersion(peerMinimum: commit.minimumVersion, peerMaximum: commit.maximumVersion)
    }
    guard let negotiated = ciphers.negotiated(with: commit.ciphers) else { throw .noCommonCipher(peer: commit.ciphers) }
    cipher = negotiated
    peerReadsPaddedRecords = commit.ciphers.contains(.paddedRecords)
    peerCommitment = commit.commitment
    transcript = HandshakeKeySchedule.mix(transcript, message)  // h1
    let reply = HandshakeMessages.Reply(version: SecureProtocol.version, ciphers: ciphers, ephemeral: ephemeral!.publicKey).encoded()
    transcript = HandshakeKeySchedule.mix(transcript, reply)  // h2
    send(reply, into: &output)
    state = .awaitingMessage(3)
  }

  /// Message 3 (responder): the initiator's ephemeral key and encrypted identity. Answers
  /// with message 4, our encrypted identity, and completes.
  mutating func receiveReveal(_ message: [UInt8], into output: inout Output) throws(HandshakeError) {
    let reveal = try HandshakeMessages.Reveal(decoding: message)
    guard Sodium.constantTimeEqual(HandshakeKeySchedule.commitment(to: reveal.ephemeral), peerCommitment) else {
      throw .commitmentMismatch
    }
    let codeTranscript = HandshakeKeySchedule.mix(transcript, reveal.prefix)  // hc
    verificationCode = VerificationCode(codeTranscript: codeTranscript)
    guard let shared = ephemeral!.sharedSecret(with: reveal.ephemeral) else { throw .invalidEphemeralKey }
    ephemeral = nil
    let chainKey = HandshakeKeySchedule.chainKey(sharedSecret: shared, codeTranscript: codeTranscript)
    self.chainKey = chainKey
    let keys = HandshakeKeySchedule.identityKeys(chainKey: chainKey)
    guard
      let plaintext = AEAD.open(
        .chacha20Poly1305, key: keys.initiator, nonce: HandshakeKeySchedule.zeroNonce, additionalData: codeTranscript,
        sealed: reveal.sealedIdentity)
    else { throw .decryptFailed(step: 3) }
    let remote = try HandshakeMessages.Identity(decoding: plaintext, step: 3)
    let signed = HandshakeKeySchedule.signedMessage(
      label: SecureProtocol.Label.initiatorSignature, transcript: codeTranscript, identity: remote.signedPart)
    guard remote.publicKey.isValidSignature(remote.signature, for: signed) else { throw .invalidSignature(step: 3) }
    guard remote.publicKey != identity.publicKey else { throw .connectedToSelf }
    transcript = HandshakeKeySchedule.mix(codeTranscript, reveal.sealedIdentity)  // h3

    let signedPart = HandshakeMessages.Identity.signedPart(publicKey: identity.publicKey, payload: payload)
    let signature = identity.sign(
      HandshakeKeySchedule.signedMessage(label: SecureProtocol.Label.responderSignature, transcript: transcript, identity: signedPart))
    let sealed = AEAD.seal(
      .chacha20Poly1305, key: keys.responder, nonce: HandshakeKeySchedule.zeroNonce, additionalData: transcript,
      plaintext: signedPart + signature)
    let confirm = [4] + sealed
    let finalTranscript = HandshakeKeySchedule.mix(transcript, confirm)  // h4
    transcript = finalTranscript
    send(confirm, into: &output)

    let transport = HandshakeKeySchedule.transportKeys(chainKey: chainKey, transcript: finalTranscript)
    let result = HandshakeResult(
      remotePublicKey: remote.publicKey, remotePeerID: remote.publicKey.peerID, remotePayload: remote.payload, cipher: cipher!,
      peerReadsPaddedRecords: peerReadsPaddedRecords, sendKey: transport.responderToInitiator, receiveKey: transport.initiatorToResponder,
      verificationCode: verificationCode!,
      transcriptHash: finalTranscript)
    complete(result, into: &output)
  }
}
