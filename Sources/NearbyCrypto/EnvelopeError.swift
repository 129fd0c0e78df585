import NearbyCore

/// Why an end-to-end envelope or a signed receipt was not sealed, verified or opened.
package enum EnvelopeError: Error, Hashable, Sendable, CustomStringConvertible {
  /// The key given for the origin does not own the origin's id.
  case originKeyMismatch(origin: PeerID, keyOwner: PeerID)
  /// The key given for a recipient does not own that recipient's id.
  case recipientKeyMismatch(recipient: PeerID, keyOwner: PeerID)
  /// A recipient's key is not a valid Ed25519 point, so nothing can be encrypted to it.
  case invalidRecipientKey(PeerID)
  /// Recipients must be listed (a message to everyone lists every recipient), at most 4 096,
  /// each once, none all-zero.
  case invalidRecipients(String)
  /// The plaintext is larger than 1 MiB.
  case bodyTooLarge(Int)
  /// The bytes do not have the envelope's layout for this many recipients.
  case malformed(String)
  /// An envelope format this version does not know.
  case unsupportedFormat(UInt8)
  /// The origin's signature does not verify: the envelope (or the MESSAGE fields it covers:
  /// origin, id, timestamp, recipients) was altered, or it was not written by the origin.
  case invalidSignature
  /// We are not among the recipients.
  case notARecipient(PeerID)
  /// Our wrapped content key does not open (altered, or wrapped for another key).
  case keyUnwrapFailed
  /// The content key does not match the origin's commitment: the origin gave different
  /// recipients different keys.
  case keyCommitmentMismatch
  /// The body does not decrypt under the content key.
  case decryptFailed
  /// A receipt's signature does not verify with the recipient's key.
  case invalidReceiptSignature
  /// A receipt's bytes do not have the receipt layout.
  case malformedReceipt(String)

  /// The case's name, as in the specification (`invalidSignature`, ...).
  package var name: String {
    switch self {
    case .originKeyMismatch: "originKeyMismatch"
    case .recipientKeyMismatch: "recipientKeyMismatch"
    case .invalidRecipientKey: "invalidRecipientKey"
    case .invalidRecipients: "invalidRecipients"
    case .bodyTooLarge: "bodyTooLarge"
    case .malformed: "malformed"
    case .unsupportedFormat: "unsupportedFormat"
    case .invalidSignature: "invalidSignature"
    case .notARecipient: "notARecipient"
    case .keyUnwrapFailed: "keyUnwrapFailed"
    case .keyCommitmentMismatch: "keyCommitmentMismatch"
    case .decryptFailed: "decryptFailed"
    case .invalidReceiptSignature: "invalidReceiptSignature"
    case .malformedReceipt: "malformedReceipt"
    }
  }

  package var description: String {
    switch self {
    case .originKeyMismatch(let origin, let owner):
      "the key given for origin \(origin.hex) belongs to \(owner.hex): look the origin's key up again"
    case .recipientKeyMismatch(let recipient, let owner):
      "the key given for recipient \(recipient.hex) belongs to \(owner.hex): look the recipient's key up again"
    case .invalidRecipientKey(let recipient):
      "the key of recipient \(recipient.hex) is not a valid Ed25519 public key; the message cannot be encrypted to it"
    case .invalidRecipients(let reason):
      "invalid recipients for an end-to-end message: \(reason)"
    case .bodyTooLarge(let count):
      "the message body of \(count) bytes is larger than \(ProtocolLimits.maximumBodyLength)"
    case .malformed(let reason):
      "malformed end-to-end message: \(reason)"
    case .unsupportedFormat(let format):
      "the end-to-end message has format \(format); this version reads format \(Envelope.format): the sender runs a newer Nearby"
    case .invalidSignature:
      "the origin's signature over the message is invalid: it was altered on the way (by a relay?) or forged; it was dropped"
    case .notARecipient(let id):
      "this peer (\(id.hex)) is not among the message's recipients, so it cannot read it"
    case .keyUnwrapFailed:
      "the message's content key for this peer does not decrypt: it was altered, or encrypted to another key"
    case .keyCommitmentMismatch:
      "the message's content key does not match the origin's commitment: the origin sent different recipients different contents"
    case .decryptFailed:
      "the message body does not decrypt with its content key: it was altered"
    case .invalidReceiptSignature:
      "the delivery receipt's signature is invalid: it was altered or forged, so the delivery is not confirmed"
    case .malformedReceipt(let reason):
      "malformed delivery receipt: \(reason)"
    }
  }
}
