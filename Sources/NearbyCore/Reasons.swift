/// Capability bits of HELLO (PROTOCOL.md section 4.1).
package struct Capabilities: OptionSet, Hashable, Sendable {
  package let rawValue: UInt32
  package init(rawValue: UInt32) { self.rawValue = rawValue }

  /// Retired: version 1 reserved it for encryption, which version 2 always has. Sent as 0.
  package static let encryption = Capabilities(rawValue: 1 << 0)
  /// The sender is a relay: it forwards messages and sends ROSTER.
  package static let relay = Capabilities(rawValue: 1 << 1)
  /// The sender resumes sessions after a lost connection (RESUME, PROTOCOL.md 6.5).
  package static let resume = Capabilities(rawValue: 1 << 2)
  /// The sender takes part in file transfers (FILE frames, PROTOCOL.md section 13).
  package static let files = Capabilities(rawValue: 1 << 3)
  /// The sender understands what federated relays send (PROTOCOL.md 9.6): ROSTER entries
  /// with sites, and UNDELIVERABLE `queued`, `expired` and `storeFailed`.
  package static let federation = Capabilities(rawValue: 1 << 4)
}

/// Why an invitation was declined (DECLINE reason). Unknown numbers are kept.
public struct DeclineReason: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
  public let rawValue: UInt8
  public init(rawValue: UInt8) { self.rawValue = rawValue }

  public static let declined = DeclineReason(rawValue: 1)
  public static let timeout = DeclineReason(rawValue: 2)
  public static let busy = DeclineReason(rawValue: 3)
  public static let notAllowed = DeclineReason(rawValue: 4)
  public static let shuttingDown = DeclineReason(rawValue: 5)
  /// The answer to RESUME: the peer does not know that session (it restarted, or gave up).
  public static let unknownSession = DeclineReason(rawValue: 6)

  public var description: String {
    switch rawValue {
    case 1: "declined"
    case 2: "timeout"
    case 3: "busy"
    case 4: "notAllowed"
    case 5: "shuttingDown"
    case 6: "unknownSession"
    default: "declined (reason \(rawValue))"
    }
  }
}

/// Why a peer closed a connection on purpose (GOODBYE reason). Unknown numbers are kept.
public struct GoodbyeReason: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
  public let rawValue: UInt8
  public init(rawValue: UInt8) { self.rawValue = rawValue }

  public static let leaving = GoodbyeReason(rawValue: 1)
  public static let shuttingDown = GoodbyeReason(rawValue: 2)
  public static let duplicate = GoodbyeReason(rawValue: 3)
  public static let invitationTimeout = GoodbyeReason(rawValue: 4)
  public static let invitationDeclined = GoodbyeReason(rawValue: 5)
  public static let replaced = GoodbyeReason(rawValue: 6)
  public static let idle = GoodbyeReason(rawValue: 7)

  public var description: String {
    switch rawValue {
    case 1: "leaving"
    case 2: "shuttingDown"
    case 3: "duplicate"
    case 4: "invitationTimeout"
    case 5: "invitationDeclined"
    case 6: "replaced"
    case 7: "idle"
    default: "leaving (reason \(rawValue))"
    }
  }
}

/// The code of an ERROR frame. Unknown numbers are kept.
public struct ErrorCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
  public let rawValue: UInt16
  public init(rawValue: UInt16) { self.rawValue = rawValue }

  public static let malformedFrame = ErrorCode(rawValue: 1)
  public static let frameTooLarge = ErrorCode(rawValue: 2)
  public static let unexpectedFrame = ErrorCode(rawValue: 3)
  public static let unknownFrameType = ErrorCode(rawValue: 4)
  public static let unsupportedVersion = ErrorCode(rawValue: 5)
  public static let invalidHello = ErrorCode(rawValue: 6)
  public static let handshakeTimeout = ErrorCode(rawValue: 7)
  public static let busy = ErrorCode(rawValue: 8)
  public static let wrongPeer = ErrorCode(rawValue: 9)
  /// Protocol version 2: the handshake failed (the message names the cause).
  public static let handshakeFailed = ErrorCode(rawValue: 10)
  /// Protocol version 2: a record did not decrypt (altered, replayed, reordered or dropped).
  public static let decryptFailed = ErrorCode(rawValue: 11)
  /// The receiver ran out of a resource it limits (PROTOCOL.md section 8), such as the
  /// memory for frames that have not arrived completely: this peer used the most of it.
  public static let resourceExhausted = ErrorCode(rawValue: 12)

  public var description: String {
    switch rawValue {
    case 1: "malformedFrame"
    case 2: "frameTooLarge"
    case 3: "unexpectedFrame"
    case 4: "unknownFrameType"
    case 5: "unsupportedVersion"
    case 6: "invalidHello"
    case 7: "handshakeTimeout"
    case 8: "busy"
    case 9: "wrongPeer"
    case 10: "handshakeFailed"
    case 11: "decryptFailed"
    case 12: "resourceExhausted"
    default: "error \(rawValue)"
    }
  }
}

/// Why a message did not reach a recipient (UNDELIVERABLE reason). Unknown numbers are kept.
public struct UndeliverableReason: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
  public let rawValue: UInt8
  public init(rawValue: UInt8) { self.rawValue = rawValue }

  public static let unknownRecipient = UndeliverableReason(rawValue: 1)
  public static let queueFull = UndeliverableReason(rawValue: 2)
  public static let hopLimit = UndeliverableReason(rawValue: 3)
  public static let notForMe = UndeliverableReason(rawValue: 4)
  /// Not a failure: a federated relay stored the message for a recipient that is offline; it
  /// is delivered (DELIVERED follows) when the recipient connects at any site.
  public static let queued = UndeliverableReason(rawValue: 5)
  /// A stored message was not delivered before the federation's age limit.
  public static let expired = UndeliverableReason(rawValue: 6)
  /// The federation (NATS JetStream) did not store the message: it is full or unavailable.
  public static let storeFailed = UndeliverableReason(rawValue: 7)

  public var description: String {
    switch rawValue {
    case 1: "unknownRecipient"
    case 2: "queueFull"
    case 3: "hopLimit"
    case 4: "notForMe"
    case 5: "queued"
    case 6: "expired"
    case 7: "storeFailed"
    default: "undeliverable (reason \(rawValue))"
    }
  }

  /// What happened and what to do, for people: a sentence that says the cause and, where
  /// there is one, the remedy, then the reason's name (``description``), or its number when
  /// this version does not know it, in parentheses.
  public var explanation: String {
    let cause =
      switch rawValue {
      case 1: "no relay on the way knows the recipient now (it left, or the relay behind it is away); send again once it is reachable"
      case 2: "the recipient's queue at a relay was full because it reads too slowly; send again later"
      case 3:
        "it crossed as many relays as its hop limit allows without reaching the recipient, so the relays may be linked in a loop; check how they connect"
      case 4: "it reached a peer that is not among its recipients (a sender that does not follow the protocol)"
      case 5: "a federated relay keeps it until the recipient connects at any site"
      case 6: "the federation kept it for the recipient, who did not connect before its age limit"
      case 7: "the federation could not keep it for the recipient, who is offline, because its store is full or unavailable; send again later"
      default: "a peer reported a reason this version does not know; updating Nearby may say more"
      }
    return "\(cause) (\((1...7).contains(rawValue) ? description : "reason \(rawValue)"))"
  }
}

/// The kind of a ROSTER frame (on the wire, bit 7 of the kind byte says that the entries
/// carry sites: ``Frame/Roster/carriesSites``).
package struct RosterKind: RawRepresentable, Hashable, Sendable {
  package let rawValue: UInt8
  package init?(rawValue: UInt8) {
    guard rawValue <= 2 else { return nil }
    self.rawValue = rawValue
  }
  /// The bit of the kind byte that marks entries with sites (PROTOCOL.md 9.6).
  package static let sitesBit: UInt8 = 0x80
  package static let full = RosterKind(rawValue: 0)!
  package static let add = RosterKind(rawValue: 1)!
  package static let remove = RosterKind(rawValue: 2)!
}
