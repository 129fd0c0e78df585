import NearbyCore

extension Envelope.Flags {
  /// The body is a FILE frame's type byte and payload, not a message (PROTOCOL.md 13.6).
  package static let fileTransfer = Envelope.Flags(rawValue: 2)
}

extension SessionEndToEnd {
  package func sealTransfer(_ frame: [UInt8], header: EnvelopeHeader, recipientKeys: [[UInt8]]) -> Result<[UInt8], EndToEndError> {
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
        try Envelope.seal(frame, header: Self.header(header), flags: .fileTransfer, recipientKeys: keys, origin: identity, random: &random))
    } catch {
      return .failure(Self.error(error))
    }
  }
}
