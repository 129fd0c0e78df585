/// One frame of the wire protocol (PROTOCOL.md section 4), decoded.
package enum Frame: Hashable, Sendable {
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
  /// VERIFY: the sender's person asks ours to compare the connection's verification code.
  case verify
  /// RESUME: continues a session whose connection was lost, without a new invitation.
  case resume(Resume)
  /// FILE: a step of a file transfer (PROTOCOL.md section 13).
  case file(TransferFrame)

  /// The frame's type byte.
  package var type: FrameType {
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
    case .verify: .verify
    case .resume: .resume
    case .file: .file
    }
  }

  /// What receiving the frame costs, in frames (the transport's `framesPerTurn` limit counts
  /// these): 1, but a ROSTER counts one per 4 entries. Each entry is checked (its key must own
  /// its id) and may change a route: about a quarter of what a small message costs.
  package var receiveWork: Int {
    if case .roster(let roster) = self { return max(1, roster.entries.count / 4) }
    return 1
  }
}

extension Frame {
  /// HELLO: who the sender is and what it speaks.
  package struct Hello: Hashable, Sendable {
    package var minVersion: UInt8
    package var maxVersion: UInt8
    package var capabilities: Capabilities
    package var peer: Peer

    package init(
      minVersion: UInt8 = UInt8(ProtocolLimits.version), maxVersion: UInt8 = UInt8(ProtocolLimits.version), capabilities: Capabilities = [],
      peer: Peer
    ) {
      self.minVersion = minVersion
      self.maxVersion = maxVersion
      self.capabilities = capabilities
      self.peer = peer
    }
  }

  /// INVITE: the connector asks the listener to join a session.
  package struct Invite: Hashable, Sendable {
    package var invitationID: UInt64
    /// Milliseconds, within ``ProtocolLimits/invitationTimeoutRange``.
    package var timeoutMilliseconds: UInt32
    package var context: [UInt8]

    package init(invitationID: UInt64, timeoutMilliseconds: UInt32, context: [UInt8]) {
      self.invitationID = invitationID
      self.timeoutMilliseconds = timeoutMilliseconds
      self.context = context
    }
  }

  /// MESSAGE: application data.
  package struct Message: Hashable, Sendable {
    package var id: UInt64
    /// The peer that wrote the message.
    package var sender: PeerID
    /// Milliseconds since the Unix epoch, on the sender's clock.
    package var timestamp: UInt64
    package var hopLimit: UInt8
    /// Empty: for every peer of the session.
    package var recipients: [PeerID]
    package var body: [UInt8]

    package init(id: UInt64, sender: PeerID, timestamp: UInt64, hopLimit: UInt8 = ProtocolLimits.initialHopLimit, recipients: [PeerID], body: [UInt8])
    {
      self.id = id
      self.sender = sender
      self.timestamp = timestamp
      self.hopLimit = hopLimit
      self.recipients = recipients
      self.body = body
    }

    /// Addressed to named peers rather than to all.
    package var isPrivate: Bool { !recipients.isEmpty }
  }

  /// DELIVERED: `recipient` has handed messages of `origin` to its application.
  package struct Delivered: Hashable, Sendable {
    package var origin: PeerID
    package var recipient: PeerID
    package var ids: [UInt64]
    /// The recipient's Ed25519 signature over the receipt (PROTOCOL.md 9.5), present when
    /// the receipt travels through relays; `nil` on a direct session, whose channel already
    /// authenticates it.
    package var signature: [UInt8]?

    package init(origin: PeerID, recipient: PeerID, ids: [UInt64], signature: [UInt8]? = nil) {
      self.origin = origin
      self.recipient = recipient
      self.ids = ids
      self.signature = signature
    }
  }

  /// ROSTER: the peers a relay can reach.
  package struct Roster: Hashable, Sendable {
    package struct Entry: Hashable, Sendable {
      package var peer: Peer
      /// 1 for a peer connected to the relay itself.
      package var hops: UInt8
      /// The peer's Ed25519 public key (32 bytes), which owns its id: what messages to it are
      /// sealed for, and what its messages and receipts are checked with.
      package var publicKey: [UInt8]
      /// Where the peer is, from a federated relay (sent only in rosters that
      /// ``Roster/carriesSites``; `nil` otherwise).
      package var site: PeerSite?
      package init(peer: Peer, hops: UInt8, publicKey: [UInt8], site: PeerSite? = nil) {
        self.peer = peer
        self.hops = hops
        self.publicKey = publicKey
        self.site = site
      }
    }
    package var kind: RosterKind
    package var entries: [Entry]
    /// Every entry carries a site (PROTOCOL.md 9.6): sent by a federated relay to peers whose
    /// HELLO has the `federation` capability, and only to them.
    package var carriesSites: Bool

    package init(kind: RosterKind, entries: [Entry], carriesSites: Bool = false) {
      self.kind = kind
      self.entries = entries
      self.carriesSites = carriesSites
    }
  }

  /// UNDELIVERABLE: a message did not reach one recipient.
  package struct Undeliverable: Hashable, Sendable {
    package var origin: PeerID
    package var messageID: UInt64
    package var recipient: PeerID
    package var reason: UndeliverableReason

    package init(origin: PeerID, messageID: UInt64, recipient: PeerID, reason: UndeliverableReason) {
      self.origin = origin
      self.messageID = messageID
      self.recipient = recipient
      self.reason = reason
    }
  }
}
