/// Identifies a message: unique per sender, increasing in the order the sender sent its
/// messages. With the sender's peer id it identifies the message end to end (relays keep it).
public struct MessageID: RawRepresentable, Hashable, Comparable, Sendable, CustomStringConvertible, ExpressibleByIntegerLiteral {
  public let rawValue: UInt64

  public init(rawValue: UInt64) { self.rawValue = rawValue }

  public init(integerLiteral value: UInt64) { self.rawValue = value }

  public static func < (lhs: MessageID, rhs: MessageID) -> Bool { lhs.rawValue < rhs.rawValue }

  /// The decimal number (as in the JSON events).
  public var description: String { String(rawValue) }
}

/// What became of one message sent by ``SessionStateMachine`` (and the session): how many
/// peers it was for, how many confirmed it, and which could not get it.
public struct DeliveryReport: Hashable, Sendable {
  public let messageID: MessageID
  /// The peers the message was for (every one answers: delivered, or a failure).
  public let recipients: Int
  /// How many confirmed it: their application took the message.
  public let delivered: Int
  /// The recipients that did not get it, and why.
  public let failures: [DeliveryFailure]

  package init(messageID: MessageID, recipients: Int, delivered: Int, failures: [DeliveryFailure]) {
    self.messageID = messageID
    self.recipients = recipients
    self.delivered = delivered
    self.failures = failures
  }

  /// Every recipient has answered.
  public var isComplete: Bool { delivered + failures.count >= recipients }
  /// Every recipient confirmed it.
  public var isDelivered: Bool { isComplete && failures.isEmpty }
}

/// A recipient that did not get a message.
public struct DeliveryFailure: Hashable, Sendable {
  public let peerID: PeerID
  /// What we know of the peer, if anything.
  public let peer: Peer?
  public let reason: UndeliveredReason

  package init(peerID: PeerID, peer: Peer?, reason: UndeliveredReason) {
    self.peerID = peerID
    self.peer = peer
    self.reason = reason
  }
}

/// Why ``NearbySession/send(_:to:)`` sent nothing. (A message that reached some of its
/// recipients is not an error: the others are reported undelivered.)
public enum SendError: Error, Hashable, Sendable, CustomStringConvertible {
  /// No recipient can be reached: nobody is connected, or the named peers are not.
  case notConnected([PeerID])
  /// The body is larger than the protocol allows.
  case bodyTooLarge(byteCount: Int, limit: Int)
  /// More recipients than one message may have.
  case tooManyRecipients(count: Int, limit: Int)
  /// `.peers([])`: nobody to send to.
  case noRecipients
  /// The session is not running (not started yet, or shut down).
  case notRunning
  /// The sending task was cancelled while it waited for room.
  case cancelled

  public var description: String {
    switch self {
    case .notConnected(let peers) where peers.isEmpty:
      "not sent: no peer is connected (invite one first)"
    case .notConnected(let peers):
      "not sent: not connected to \(peers.map(\.shortHex).joined(separator: ", ")) (invite \(peers.count == 1 ? "it" : "them") first)"
    case .bodyTooLarge(let count, let limit):
      "not sent: the message is \(count) bytes, more than the limit of \(limit) bytes (split it)"
    case .tooManyRecipients(let count, let limit):
      "not sent: \(count) recipients, more than the limit of \(limit) (send it to everyone, or in parts)"
    case .noRecipients:
      "not sent: the list of recipients is empty"
    case .notRunning:
      "not sent: the session is not running (start it with run(), or it has shut down)"
    case .cancelled:
      "not sent: the sending task was cancelled while it waited for room"
    }
  }
}
