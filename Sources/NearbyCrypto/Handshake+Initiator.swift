import NearbyCore

extension Handshake {
  /// Message 2 (initiator): the responder's ephemeral key and ciphers. Answers with message
  /// 3: the reveal of our ephemeral key and our encrypted, signed identity.
  mutating func receiveReply(_ message: [UInt8], into output: inout Output) throws(HandshakeError) {
    let reply = try HandshakeMessages.Reply(decoding: message)
    guard reply.version == SecureProtocol.version else {
      throw .noCommonVersion(peerMinimum: reply.version, peerMaximum: reply.version)
    }
    guard let negotiated = ciphers.negotiated(with: reply.ciphers) else { throw .noCommonCipher(peer: reply.ciphers) }
    cipher = negotiated
    peerReadsPaddedRecords = reply.ciphers.contains(.paddedRecords)
    transcript = HandshakeKeySchedule.mix(transcript, message)  // h2

    let ephemeral = self.ephemeral!
    let reveal = [3] + ephemeral.publicKey
    let codeTranscript = HandshakeKeySchedule.mix(transcript, reveal)  // hc
    verificationCode = VerificationCode(codeTranscript: codeTranscript)
    guard let shared = ephemeral.sharedSecret(with: reply.ephemeral) else { throw .invalidEphemeralKey }
    self.ephemeral = nil
    let chainKey = HandshakeKeySchedule.chainKey(sharedSecret: shared, codeTranscript: codeTranscript)
    self.chainKey = chainKey
    let keys = HandshakeKeySchedule.identityKeys(chainKey: chainKey)

    let signedPart = HandshakeMessages.Identity.signedPart(publicKey: identity.publicKey, payload: payload)
    let signature = identity.sign(
      HandshakeKeySchedule.signedMessage(label: SecureProtocol.Label.initiatorSignature, transcript: codeTranscript, identity: signedPart))
    let sealed = AEAD.seal(
      .chacha20Poly1305, key: keys.initiator, nonce: HandshakeKeySchedule.zeroNonce, additionalData: codeTranscript,
      plaintext: signedPart + signature)
    transcript = HandshakeKeySchedule.mix(codeTranscript, sealed)  // h3
    send(reveal + sealed, into: &output)
    state = .awaitingMessage(4)
  }

  /// Message 4 (initiator): the responder's encrypted identity. Completes the handshake.
  mutating func receiveConfirm(_ message: [UInt8], into output: inout Output) throws(HandshakeError) {
    let sealed = try HandshakeMessages.decodeConfirm(message)
    let chainKey = self.chainKey!
    let key = HandshakeKeySchedule.identityKeys(chainKey: chainKey).responder
    guard
      let plaintext = AEAD.open(
        .chacha20Poly1305, key: key, nonce: HandshakeKeySchedule.zeroNonce, additionalData: transcript, sealed: sealed)
    else { throw .decryptFailed(step: 4) }
    let remote = try HandshakeMessages.Identity(decoding: plaintext, step: 4)
    let signed = HandshakeKeySchedule.signedMessage(
      label: SecureProtocol.Label.responderSignature, transcript: transcript, identity: remote.signedPart)
    guard remote.publicKey.isValidSignature(remote.signature, for: signed) else { throw .invalidSignature(step: 4) }
    guard remote.publicKey != identity.publicKey else { throw .connectedToSelf }
    let remoteID = remote.publicKey.peerID
    if case .initiator(let expected?) = role, expected != remoteID { throw .wrongPeer(expected: expected, actual: remoteID) }

    let finalTranscript = HandshakeKeySchedule.mix(transcript, message)  // h4
    transcript = finalTranscript
    let keys = HandshakeKeySchedule.transportKeys(chainKey: chainKey, transcript: finalTranscript)
    let result = HandshakeResult(
      remotePublicKey: remote.publicKey, remotePeerID: remoteID, remotePayload: remote.payload, cipher: cipher!,
      peerReadsPaddedRecords: peerReadsPaddedRecords, sendKey: keys.initiatorToResponder, receiveKey: keys.responderToInitiator,
      verificationCode: verificationCode!,
      transcriptHash: finalTranscript)
    complete(result, into: &output)
  }
}
