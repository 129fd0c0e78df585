/// The cryptography of messages that travel through relays (PROTOCOL.md section 9.4): the
/// session state machine decides what to seal, for whom, and what to check; the shell gives
/// it an implementation (NearbyCrypto's, over libsodium), so this module stays free of it.
package protocol EndToEndCrypto: Sendable {
  /// Whether `publicKey` owns `id` (ids are derived from keys).
  func owns(_ publicKey: [UInt8], _ id: PeerID) -> Bool
  /// Seals `body` for `header.recipients` (their keys in the same order), signed by us.
  /// - Returns: the envelope, or why it could not be made.
  func seal(_ body: [UInt8], header: EnvelopeHeader, toEveryone: Bool, recipientKeys: [[UInt8]]) -> Result<[UInt8], EndToEndError>
  /// Seals the type byte and payload of a FILE frame for `header.recipients` (envelope flag
  /// `fileTransfer`, PROTOCOL.md 13.6), signed by us.
  func sealTransfer(_ frame: [UInt8], header: EnvelopeHeader, recipientKeys: [[UInt8]]) -> Result<[UInt8], EndToEndError>
  /// Checks the origin's signature only (what a relay can do).
  func verify(_ envelope: [UInt8], header: EnvelopeHeader, originKey: [UInt8]) -> Result<Void, EndToEndError>
  /// Verifies and opens an envelope addressed to us.
  func open(_ envelope: [UInt8], header: EnvelopeHeader, originKey: [UInt8]) -> Result<OpenedEnvelope, EndToEndError>
  /// Our signature of a receipt for `ids` of `origin`.
  func signReceipt(origin: PeerID, ids: [UInt64]) -> [UInt8]
  /// Whether `signature` is `recipient`'s (whose key is `recipientKey`) over that receipt.
  func isValidReceipt(_ signature: [UInt8], origin: PeerID, recipient: PeerID, ids: [UInt64], recipientKey: [UInt8]) -> Bool
}

/// The clear fields of a MESSAGE that its origin signs with the envelope.
package struct EnvelopeHeader: Hashable, Sendable {
  package var origin: PeerID
  package var messageID: UInt64
  package var timestamp: UInt64
  package var recipients: [PeerID]

  package init(origin: PeerID, messageID: UInt64, timestamp: UInt64, recipients: [PeerID]) {
    self.origin = origin
    self.messageID = messageID
    self.timestamp = timestamp
    self.recipients = recipients
  }

  package init(_ message: Frame.Message) {
    self.init(origin: message.sender, messageID: message.id, timestamp: message.timestamp, recipients: message.recipients)
  }
}

/// What a recipient finds in an envelope.
package struct OpenedEnvelope: Hashable, Sendable {
  package var body: [UInt8]
  /// The origin meant it for everyone (it lists everyone it could reach).
  package var toEveryone: Bool

  /// The body is a FILE frame (its type byte and payload), not a message.
  package var isFileTransfer = false

  package init(body: [UInt8], toEveryone: Bool, isFileTransfer: Bool = false) {
    self.body = body
    self.toEveryone = toEveryone
    self.isFileTransfer = isFileTransfer
  }
}

/// Why an envelope or a receipt failed its end-to-end check.
package struct EndToEndError: Error, Hashable, Sendable, CustomStringConvertible {
  /// The check that failed (`invalidSignature`, `notARecipient`, ...).
  package let name: String
  package let description: String

  package init(_ name: String, _ description: String) {
    self.name = name
    self.description = description
  }
}

/// The stand-in for sessions that were given no end-to-end cryptography (tests of other
/// parts): nothing can be sealed, opened or signed, so nothing travels through relays.
package struct NoEndToEndCrypto: EndToEndCrypto {
  package init() {}
  static let unavailable = EndToEndError("unavailable", "this session has no end-to-end keys")
  package func owns(_ publicKey: [UInt8], _ id: PeerID) -> Bool { false }
  package func seal(_ body: [UInt8], header: EnvelopeHeader, toEveryone: Bool, recipientKeys: [[UInt8]]) -> Result<[UInt8], EndToEndError> {
    .failure(Self.unavailable)
  }
  package func verify(_ envelope: [UInt8], header: EnvelopeHeader, originKey: [UInt8]) -> Result<Void, EndToEndError> {
    .failure(Self.unavailable)
  }
  package func open(_ envelope: [UInt8], header: EnvelopeHeader, originKey: [UInt8]) -> Result<OpenedEnvelope, EndToEndError> {
    .failure(Self.unavailable)
  }
  package func signReceipt(origin: PeerID, ids: [UInt64]) -> [UInt8] { [UInt8](repeating: 0, count: 64) }
  package func isValidReceipt(_ signature: [UInt8], origin: PeerID, recipient: PeerID, ids: [UInt64], recipientKey: [UInt8]) -> Bool {
    false
  }
}
