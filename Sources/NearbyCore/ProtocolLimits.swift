/// The numbers of PROTOCOL.md in one place.
package enum ProtocolLimits {
  /// The protocol version this implementation speaks: 2, authenticated and encrypted
  /// (PROTOCOL.md), and only that.
  package static let version = 2
  /// The largest `length` (type byte plus payload) of a frame: 2 MiB.
  package static let maximumFrameLength = 2_097_152
  /// The largest message body: 1 MiB.
  package static let maximumBodyLength = 1_048_576
  /// The largest MESSAGE body on the wire: an end-to-end envelope of a 1 MiB body to 4 096
  /// recipients (146 + 48 × 4 096 + 1 048 576 bytes).
  package static let maximumSealedBodyLength = 1_245_330
  /// The largest number of recipients in one MESSAGE.
  package static let maximumRecipients = 4096
  /// The largest number of ids in one DELIVERED.
  package static let maximumDeliveredIDs = 8192
  /// The largest number of entries in one ROSTER.
  package static let maximumRosterEntries = 4096
  /// The largest ERROR message in bytes.
  package static let maximumErrorMessageBytes = 1024
  /// The largest invitation context in bytes.
  package static let maximumContextLength = 65_535
  /// The allowed invitation timeout in milliseconds.
  package static let invitationTimeoutRange: ClosedRange<UInt32> = 100...600_000
  /// The hop limit a sender starts a message with.
  package static let initialHopLimit: UInt8 = 8
  /// `"NRBY"`, the first four bytes of every HELLO payload.
  package static let helloMagic: [UInt8] = [0x4E, 0x52, 0x42, 0x59]
}
