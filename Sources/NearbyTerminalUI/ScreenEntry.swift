import Nearby
import Synchronization

/// A line of a conversation, as the terminal chat keeps it: `[12:02:03] k text`, where `k`
/// is a one-column kind mark (span 1).
public struct ScreenEntry: Hashable, Sendable {
  /// What the line is about: messages count as unread, the rest does not.
  public enum Kind: Hashable, Sendable {
    /// A message from a peer.
    case message
    /// A message of ours.
    case own
    /// Anything else: notices, errors, answers to commands.
    case notice
  }

  public private(set) var line: StyledLine
  public let kind: Kind
  /// The columns that rows after the first are indented by (under the text after the name).
  public let indent: Int
  /// When it happened (milliseconds since the epoch) and its local day (day-change lines).
  public let time: UInt64
  public let day: LocalDay
  /// Own messages: the id whose delivery mark the line shows (in span 1).
  public var messageID: MessageID?
  /// Unique to this entry as it is now (a change gives it a new one): what its wrapped rows
  /// are cached under.
  public private(set) var revision: UInt64
  /// The bytes of its text (UTF-8), as made: what it counts against its conversation's
  /// ``Conversation/byteCapacity`` (a new delivery mark changes one column of it).
  public let byteCount: Int

  private static let revisions = Atomic<UInt64>(0)
  private static func nextRevision() -> UInt64 { revisions.add(1, ordering: .relaxed).newValue }

  public init(_ line: StyledLine, kind: Kind = .notice, indent: Int = 0, time: UInt64 = 0, messageID: MessageID? = nil) {
    self.line = line
    self.kind = kind
    self.indent = indent
    self.time = time
    self.day = LocalDay(time)
    self.messageID = messageID
    revision = Self.nextRevision()
    byteCount = line.spans.reduce(0) { $0 + $1.text.utf8.count }
  }

  /// Entries are equal when they look and mean the same (whatever their revision).
  public static func == (lhs: ScreenEntry, rhs: ScreenEntry) -> Bool {
    (lhs.line, lhs.kind, lhs.indent, lhs.time, lhs.messageID) == (rhs.line, rhs.kind, rhs.indent, rhs.time, rhs.messageID)
  }

  public func hash(into hasher: inout Hasher) {
    hasher.combine(line)
    hasher.combine(time)
  }

  /// Replaces the kind mark (the delivery mark of an own message).
  mutating func setMark(_ mark: DeliveryMark) {
    guard line.spans.count > 1 else { return }
    line.spans[1] = mark.span
    revision = Self.nextRevision()
  }
}

/// Whether an own message reached its peers, as the mark on its line shows.
public enum DeliveryMark: Hashable, Sendable {
  case pending
  /// Kept by a federated relay until its peer is online (it may still be delivered or expire).
  case queued
  case delivered
  case failed

  public var span: StyledSpan {
    switch self {
    case .pending: StyledSpan(".", .dim)
    case .queued: StyledSpan("~", TextStyle(foreground: 33))
    case .delivered: StyledSpan("✓", TextStyle(foreground: 32))
    case .failed: StyledSpan("✗", .error)
    }
  }
}
