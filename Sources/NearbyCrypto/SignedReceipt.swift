import NearbyCore

/// A delivery receipt the recipient signs, so that the origin knows its messages arrived
/// even when relays carry the receipt: `DELIVERED` fields plus an Ed25519 signature.
///
/// Wire form: `origin(16) | recipient(16) | u16 count | ids(8 × count) | signature(64)`
/// (v1's DELIVERED payload followed by the signature), where the signature covers
/// `"nearby-v2-receipt" || origin || recipient || u16 count || ids`.
package struct SignedReceipt: Hashable, Sendable {
  /// The origin of the acknowledged messages.
  package let origin: PeerID
  /// The peer that received them and signed.
  package let recipient: PeerID
  /// The acknowledged message ids (1 to 8 192; an id may repeat).
  package let messageIDs: [UInt64]
  /// The recipient's Ed25519 signature.
  package let signature: [UInt8]

  /// Signs a receipt for `messageIDs` of `origin`, as `recipient`.
  package init(origin: PeerID, messageIDs: [UInt64], recipient: IdentityKeyPair) {
    precondition((1...ProtocolLimits.maximumDeliveredIDs).contains(messageIDs.count), "a receipt acknowledges 1 to 8192 ids")
    self.origin = origin
    self.recipient = recipient.peerID
    self.messageIDs = messageIDs
    signature = recipient.sign(Self.signedMessage(origin: origin, recipient: recipient.peerID, messageIDs: messageIDs))
  }

  /// Reads a receipt's wire form (the signature is not checked: call ``verify(recipientKey:)``).
  /// - Throws: ``EnvelopeError/malformedReceipt(_:)``.
  package init(decoding bytes: [UInt8]) throws(EnvelopeError) {
    guard bytes.count >= 34 else { throw .malformedReceipt("\(bytes.count) bytes, fewer than 34") }
    let count = Int(bytes.bigEndian(at: 32, as: UInt16.self))
    guard (1...ProtocolLimits.maximumDeliveredIDs).contains(count) else {
      throw .malformedReceipt("count \(count) is outside 1...\(ProtocolLimits.maximumDeliveredIDs)")
    }
    guard bytes.count == 34 + 8 * count + 64 else {
      throw .malformedReceipt("\(bytes.count) bytes for \(count) ids (expected \(34 + 8 * count + 64))")
    }
    origin = PeerID(bytes: bytes[0..<16])!
    recipient = PeerID(bytes: bytes[16..<32])!
    messageIDs = (0..<count).map { bytes.bigEndian(at: 34 + 8 * $0, as: UInt64.self) }
    signature = Array(bytes[(34 + 8 * count)...])
  }

  /// The wire form.
  package func encoded() -> [UInt8] {
    var bytes = origin.bytes + recipient.bytes
    bytes.reserveCapacity(34 + 8 * messageIDs.count + 64)
    bytes.append(bigEndian: UInt16(messageIDs.count))
    for id in messageIDs { bytes.append(bigEndian: id) }
    return bytes + signature
  }

  /// Checks that `recipientKey` owns ``recipient`` and signed this receipt.
  /// - Throws: ``EnvelopeError/recipientKeyMismatch(recipient:keyOwner:)`` or
  ///   ``EnvelopeError/invalidReceiptSignature``.
  package func verify(recipientKey: IdentityPublicKey) throws(EnvelopeError) {
    guard recipientKey.owns(recipient) else { throw .recipientKeyMismatch(recipient: recipient, keyOwner: recipientKey.peerID) }
    let message = Self.signedMessage(origin: origin, recipient: recipient, messageIDs: messageIDs)
    guard recipientKey.isValidSignature(signature, for: message) else { throw .invalidReceiptSignature }
  }

  static func signedMessage(origin: PeerID, recipient: PeerID, messageIDs: [UInt64]) -> [UInt8] {
    var message = SecureProtocol.Label.receipt + origin.bytes + recipient.bytes
    message.append(bigEndian: UInt16(messageIDs.count))
    for id in messageIDs { message.append(bigEndian: id) }
    return message
  }
}
