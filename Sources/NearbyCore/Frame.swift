/// One frame of the wire protocol (PROTOCOL.md section 4), decoded.
public enum Frame: Hashable, Sendable {
  case hello(Hello)
  case invite(Invite)
  case accept(invitationID: UInt64)
  case decline(invitationID: UInt64, reason: DeclineReason)
  case message(Message)
  case delivered(Delivered)
  case ping(nonce: UInt64)
  case pong(nonce: UInt64)
  case goodbye(GoodbyeReason)
  case error(code: ErrorCode, message: String)
  case roster(Roster)
  case undeliverable(Undeliverable)

  /// The frame's type byte.
  public var type: FrameType {
    switch self {
    case .hello: .hello
    case .invite: .invite
    case .accept: .accept
    case .decline: .decline
    case .message: .message
    case .delivered: .delivered
    case .ping: .ping
    case .pong: .pong
    case .goodbye: .goodbye
    case .error: .error
    case .roster: .roster
    case .undeliverable: .undeliverable
    }
  }
}

extension Frame {
  /// HELLO: who the sender is and what it speaks.
  public struct Hello: Hashable, Sendable {
    public var minVersion: UInt8
    public var maxVersion: UInt8
    public var capabilities: Capabilities
    public var peer: Peer

    public init(minVersion: UInt8 = 1, maxVersion: UInt8 = 1, capabilities: Capabilities = [], peer: Peer) {
      self.minVersion = minVersion
      self.maxVersion = maxVersion
      self.capabilities = capabilities
      self.peer = peer
    }
  }

  /// INVITE: the connector asks the listener to join a session.
  public struct Invite: Hashable, Sendable {
    public var invitationID: UInt64
    /// Milliseconds, within ``ProtocolLimits/invitationTimeoutRange``.
    public var timeoutMilliseconds: UInt32
    public var context: [UInt8]

    public init(invitationID: UInt64, timeoutMilliseconds: UInt32, context: [UInt8]) {
      self.invitationID = invitationID
      self.timeoutMilliseconds = timeoutMilliseconds
      self.context = context
    }
  }

  /// MESSAGE: application data.
  public struct Message: Hashable, Sendable {
    public var id: UInt64
    /// The peer that wrote the message.
    public var sender: PeerID
    /// Milliseconds since the Unix epoch, on the sender's clock.
    public var timestamp: UInt64
    public var hopLimit: UInt8
    /// Empty: for every peer of the session.
    public var recipients: [PeerID]
    public var body: [UInt8]

    public init(id: UInt64, sender: PeerID, timestamp: UInt64, hopLimit: UInt8 = ProtocolLimits.initialHopLimit, recipients: [PeerID], body: [UInt8])
    {
      self.id = id
      self.sender = sender
      self.timestamp = timestamp
      self.hopLimit = hopLimit
      self.recipients = recipients
      self.body = body
    }

    /// Addressed to named peers rather than to all.
    public var isPrivate: Bool { !recipients.isEmpty }
  }

  /// DELIVERED: `recipient` has handed messages of `origin` to its application.
  public struct Delivered: Hashable, Sendable {
    public var origin: PeerID
    public var recipient: PeerID
    public var ids: [UInt64]

    public init(origin: PeerID, recipient: PeerID, ids: [UInt64]) {
      self.origin = origin
      self.recipient = recipient
      self.ids = ids
    }
  }

  /// ROSTER: the peers a relay can reach.
  public struct Roster: Hashable, Sendable {
    public struct Entry: Hashable, Sendable {
      public var peer: Peer
      /// 1 for a peer connected to the relay itself.
      public var hops: UInt8
      public init(peer: Peer, hops: UInt8) {
        self.peer = peer
        self.hops = hops
      }
    }
    public var kind: RosterKind
    public var entries: [Entry]

    public init(kind: RosterKind, entries: [Entry]) {
      self.kind = kind
      self.entries = entries
    }
  }

  /// UNDELIVERABLE: a message did not reach one recipient.
  public struct Undeliverable: Hashable, Sendable {
    public var origin: PeerID
    public var messageID: UInt64
    public var recipient: PeerID
    public var reason: UndeliverableReason

    public init(origin: PeerID, messageID: UInt64, recipient: PeerID, reason: UndeliverableReason) {
      self.origin = origin
      self.messageID = messageID
      self.recipient = recipient
      self.reason = reason
    }
  }
}
