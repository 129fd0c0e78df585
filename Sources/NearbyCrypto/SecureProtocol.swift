import NearbyCore

/// The numbers, frame types and labels of protocol version 2 (PROTOCOL.md section 3) in
/// one place.
package enum SecureProtocol {
  /// The protocol version the handshake negotiates.
  package static let version: UInt8 = 2
  /// The largest frame `length` accepted before the handshake is complete: handshake
  /// messages and the plaintext v1 frames (HELLO, ERROR) a peer may send instead.
  package static let maximumHandshakeFrameLength = 8192
  /// The largest application payload carried in a handshake identity block.
  package static let maximumPayloadLength = 4096
  /// The largest plaintext of one record: 64 KiB.
  package static let maximumRecordPlaintext = 65_536
  /// The largest `length` of a record frame: type byte, plaintext and tag.
  package static let maximumRecordLength = 1 + maximumRecordPlaintext + AEAD.tagCount
  /// A direction switches to the next key after this many records ...
  package static let rekeyAfterRecords: UInt64 = 1 << 20
  /// ... or once this many plaintext bytes were sealed under one key, whichever is first.
  package static let rekeyAfterBytes: UInt64 = 1 << 30

  /// Labels: every use of BLAKE2b and Ed25519 starts its input with its own label, so no
  /// value computed for one purpose is ever valid for another.
  enum Label {
    static let handshake = Array("nearby-v2-handshake".utf8)
    static let commitment = Array("nearby-v2-commit".utf8)
    static let chain = Array("nearby-v2-chain".utf8)
    static let initiatorIdentityKey = Array("nearby-v2-initiator-identity".utf8)
    static let responderIdentityKey = Array("nearby-v2-responder-identity".utf8)
    static let initiatorSignature = Array("nearby-v2-initiator-signature".utf8)
    static let responderSignature = Array("nearby-v2-responder-signature".utf8)
    static let initiatorToResponder = Array("nearby-v2-initiator-to-responder".utf8)
    static let responderToInitiator = Array("nearby-v2-responder-to-initiator".utf8)
    static let code = Array("nearby-v2-code".utf8)
    static let rekey = Array("nearby-v2-rekey".utf8)
    static let envelope = Array("nearby-v2-envelope".utf8)
    static let contentKey = Array("nearby-v2-content-key".utf8)
    static let wrapNonce = Array("nearby-v2-wrap-nonce".utf8)
    static let receipt = Array("nearby-v2-receipt".utf8)
  }
}

/// The frame types version 2 adds to the v1 framing `u32 length | u8 type | payload`.
package enum SecureFrameType: UInt8, Sendable, CaseIterable, CustomStringConvertible {
  /// A handshake message (plaintext frame; its payload starts with the step number 1–4).
  case handshake = 0x10
  /// A record: encrypted data.
  case record = 0x11
  /// The last record of a direction: encrypted, empty; what makes truncation detectable.
  case close = 0x12
  /// A record whose plaintext ends in padding (zeros, then their count), sent only to a peer
  /// that announced it reads them (bit 2 of the cipher byte, 3.8).
  case padded = 0x13

  package var description: String {
    switch self {
    case .handshake: "HANDSHAKE"
    case .record: "RECORD"
    case .close: "CLOSE"
    case .padded: "PADDED"
    }
  }
}
