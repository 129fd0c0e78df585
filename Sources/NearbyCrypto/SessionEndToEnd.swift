import NearbyCore

/// The session's end-to-end cryptography (NearbyCore's ``EndToEndCrypto``) with our key:
/// envelopes (``Envelope``) and signed receipts (``SignedReceipt``) over libsodium.
package struct SessionEndToEnd: EndToEndCrypto {
  let identity: IdentityKeyPair

  package init(identity: IdentityKeyPair) { self.identity = identity }

  package func owns(_ publicKey: [UInt8], _ id: PeerID) -> Bool {
    IdentityPublicKey(bytes: publicKey)?.owns(id) ?? false
  }

  package func seal(_ body: [UInt8], header: EnvelopeHeader, toEveryone: Bool, recipientKeys: [[UInt8]]) -> Result<[UInt8], EndToEndError> {
    var keys: [IdentityPublicKey] = []
    for (recipient, bytes) in zip(header.recipients, recipientKeys) {
      guard let key = IdentityPublicKey(bytes: bytes) else {
        return .failure(EndToEndError("invalidRecipientKey", "the key of \(recipient.hex) is not 32 bytes"))
      }
      keys.append(key)
    }
    var random = SystemCryptoRandom()
    do {
      return .success(
        try Envelope.seal(
          body, header: Self.header(header), flags: toEveryone ? .toEveryone : [], recipientKeys: keys, origin: identity, random: &random))
    } catch {
      return .failure(Self.error(error))
    }
  }

  package func verify(_ envelope: [UInt8], header: EnvelopeHeader, originKey: [UInt8]) -> Result<Void, EndToEndError> {
    guard let key = IdentityPublicKey(bytes: originKey) else {
      return .failure(EndToEndError("originKeyMismatch", "the origin's key is not 32 bytes"))
    }
    do {
      _ = try Envelope.verify(envelope, header: Self.header(header), originKey: key)
      return .success(())
    } catch {
      return .failure(Self.error(error))
    }
  }

  package func open(_ envelope: [UInt8], header: EnvelopeHeader, originKey: [UInt8]) -> Result<OpenedEnvelope, EndToEndError> {
    guard let key = IdentityPublicKey(bytes: originKey) else {
      return .failure(EndToEndError("originKeyMismatch", "the origin's key is not 32 bytes"))
    }
    do {
      let opened = try Envelope.open(envelope, header: Self.header(header), originKey: key, recipient: identity)
      return .success(
        OpenedEnvelope(body: opened.body, toEveryone: opened.flags.contains(.toEveryone), isFileTransfer: opened.flags.contains(.fileTransfer)))
    } catch {
      return .failure(Self.error(error))
    }
  }

  package func signReceipt(origin: PeerID, ids: [UInt64]) -> [UInt8] {
    SignedReceipt(origin: origin, messageIDs: ids, recipient: identity).signature
  }

  package func isValidReceipt(_ signature: [UInt8], origin: PeerID, recipient: PeerID, ids: [UInt64], recipientKey: [UInt8]) -> Bool {
    guard let key = IdentityPublicKey(bytes: recipientKey), key.owns(recipient) else { return false }
    return key.isValidSignature(signature, for: SignedReceipt.signedMessage(origin: origin, recipient: recipient, messageIDs: ids))
  }

  static func header(_ header: EnvelopeHeader) -> Envelope.Header {
    Envelope.Header(origin: header.origin, messageID: header.messageID, timestamp: header.timestamp, recipients: header.recipients)
  }

  static func error(_ error: EnvelopeError) -> EndToEndError { EndToEndError(error.name, error.description) }
}
