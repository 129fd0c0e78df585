/// Identifies one TCP connection inside a session.
package struct ConnectionID: Hashable, Sendable, Comparable, CustomStringConvertible {
  package let rawValue: UInt64
  package init(_ rawValue: UInt64) { self.rawValue = rawValue }
  package static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }
  package var description: String { "#\(rawValue)" }

  package func hash(into hasher: inout Hasher) { hasher.combine(rawValue) }

  /// What sets and dictionaries hash: a cheap mix of the seed and the number instead of
  /// SipHash, which was a tenth of the CPU time of sending and receiving a message (the
  /// session looks connections up several times per message). The session numbers its
  /// connections itself, so no peer chooses the keys these tables hash.
  package func _rawHashValue(seed: Int) -> Int {
    // The finalizer of MurmurHash3 (a bijection of 64 bits), over the number and the seed.
    var mixed = rawValue ^ UInt64(UInt(bitPattern: seed))
    mixed ^= mixed >> 33
    mixed &*= 0xff51_afd7_ed55_8ccd
    mixed ^= mixed >> 33
    mixed &*= 0xc4ce_b9fe_1a85_ec53
    mixed ^= mixed >> 33
    return Int(truncatingIfNeeded: mixed)
  }
}

/// A numeric address and port to connect to.
public struct Endpoint: Hashable, Sendable, CustomStringConvertible {
  /// A numeric IPv4 or IPv6 address (`192.0.2.1`, `fe80::1`).
  public var host: String
  public var port: UInt16
  /// The interface an IPv6 link-local address belongs to (0: any).
  public var interfaceIndex: UInt32

  public init(host: String, port: UInt16, interfaceIndex: UInt32 = 0) {
    self.host = host
    self.port = port
    self.interfaceIndex = interfaceIndex
  }

  public var description: String {
    host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
  }
}

/// A peer seen through DNS-SD.
public struct DiscoveredPeer: Hashable, Sendable {
  package var advertisement: PeerAdvertisement
  /// The host name the instance resolved to (`host-a.local.`).
  public var hostName: String
  /// Where it listens, best first.
  public var endpoints: [Endpoint]

  package init(advertisement: PeerAdvertisement, hostName: String, endpoints: [Endpoint]) {
    self.advertisement = advertisement
    self.hostName = hostName
    self.endpoints = endpoints
  }

  /// The peer: its id and display name.
  public var peer: Peer { advertisement.peer }
  /// The discovery info it publishes.
  public var info: DiscoveryInfo { advertisement.info }
  /// Whether it is a relay (TXT `relay=1`).
  public var isRelay: Bool { advertisement.isRelay }
}

/// How the session answers invitations.
public enum AcceptPolicy: String, Hashable, Sendable, CaseIterable {
  /// Report each invitation and let the person (or program) decide.
  case ask
  /// Accept every invitation.
  case all
  /// Decline every invitation (peers on the allow-list are still accepted).
  case none
  /// Accept invitations from peers whose verification code the person compared (``PeerSecurity/isVerified``),
  /// decline every other.
  case known
}

/// What the handshake of a session proved, and what the person checked.
public struct PeerSecurity: Hashable, Sendable {
  /// The six digits both sides can compare (the same on both ends unless someone in the
  /// middle terminated the connection).
  public let verificationCode: String
  /// The person compared the code with the peer's (``NearbySession/trust(_:)``), in this
  /// run or an earlier one: the peer's key is the one they checked.
  public let isVerified: Bool

  package init(verificationCode: String, isVerified: Bool) {
    self.verificationCode = verificationCode
    self.isVerified = isVerified
  }

  /// Six digits in two groups for people to read aloud: `"042 917"`.
  public var groupedCode: String {
    verificationCode.count == 6 ? String(verificationCode.prefix(3)) + " " + String(verificationCode.suffix(3)) : verificationCode
  }
}

/// An invitation waiting for our answer.
public struct Invitation: Hashable, Sendable {
  package let connection: ConnectionID
  public let invitationID: UInt64
  public let peer: Peer
  public let context: [UInt8]
  /// When it expires, on the session's clock.
  public let expiresAt: Duration
}

/// Addressees of a message.
public enum Recipients: Hashable, Sendable {
  /// Every connected peer.
  case all
  case peers([PeerID])
}

/// A message handed to the application.
public struct ReceivedMessage: Hashable, Sendable {
  public let id: MessageID
  public let from: Peer
  /// Sent to named peers rather than to all.
  public let isPrivate: Bool
  /// Milliseconds since the Unix epoch, on the sender's clock.
  public let timestamp: UInt64
  public let body: [UInt8]

  public init(id: MessageID, from: Peer, isPrivate: Bool, timestamp: UInt64, body: [UInt8]) {
    self.id = id
    self.from = from
    self.isPrivate = isPrivate
    self.timestamp = timestamp
    self.body = body
  }
}

/// Why a message did not reach a peer.
public enum UndeliveredReason: Hashable, Sendable, CustomStringConvertible {
  /// We have no connection to this peer.
  case notConnected
  /// The connection closed before the peer acknowledged the message.
  case connectionClosed(DisconnectReason)
  /// The connection's send queue is full: the peer reads too slowly.
  case queueFull
  /// A peer or relay reported it could not deliver (the description explains why).
  case remote(UndeliverableReason)
  /// The session shut down first.
  case shuttingDown
  /// It had to go through a relay, and could not be sealed for the recipient (for example:
  /// no key known for it).
  case sealingFailed(String)

  public var description: String {
    switch self {
    case .notConnected: "not connected"
    case .connectionClosed(let reason): "the connection closed before delivery was confirmed (\(reason))"
    case .queueFull: "the send queue is full (the peer reads too slowly)"
    case .remote(let reason): reason.explanation
    case .shuttingDown: "the session shut down"
    case .sealingFailed(let detail): "it could not be sealed end to end (\(detail))"
    }
  }
}

/// Errors reported on the event stream.
public enum SessionError: Error, Hashable, Sendable, CustomStringConvertible {
  /// A message (by id) did not reach `peer`.
  case undelivered(messageID: MessageID, peer: Peer?, peerID: PeerID, reason: UndeliveredReason)
  /// No endpoint of the peer answered.
  case connectFailed(peer: Peer?, detail: String)
  /// A request named a peer we do not know, or asked for something impossible.
  case rejected(String)
  /// A connection broke the protocol (logged; the connection was closed).
  case protocolError(peer: Peer?, detail: String)
  /// A connection's handshake failed: the peer could not prove who it is, is not who we
  /// dialled, or speaks an older protocol. `detail` names the cause; the connection was
  /// closed and nothing from it was delivered.
  case authenticationFailed(peer: Peer?, detail: String)
  /// A message or receipt that a relay passed on failed its end-to-end check (its origin's
  /// signature, its encryption to us): the relay altered or invented it. It was dropped.
  case relayTampered(relay: Peer?, origin: PeerID, detail: String)

  public var description: String {
    switch self {
    case .undelivered(let id, let peer, let peerID, let reason):
      "message \(id) to \(peer.map(\.description) ?? peerID.hex) not delivered: \(reason)"
    case .connectFailed(let peer, let detail):
      "could not connect\(peer.map { " to \($0)" } ?? ""): \(detail)"
    case .rejected(let detail): detail
    case .protocolError(let peer, let detail):
      "protocol error\(peer.map { " from \($0)" } ?? ""): \(detail)"
    case .authenticationFailed(let peer, let detail):
      "could not authenticate \(peer.map(\.description) ?? "a connection"): \(detail)"
    case .relayTampered(let relay, let origin, let detail):
      "the relay \(relay.map(\.description) ?? "?") passed on something claiming to come from \(origin.shortHex) that fails its end-to-end check (\(detail)): the relay altered or invented it, and it was dropped"
    }
  }
}

/// Everything a session reports, in order.
public enum SessionEvent: Hashable, Sendable {
  case found(DiscoveredPeer)
  case updated(DiscoveredPeer)
  case lost(Peer)
  /// An invitation waits for an answer: accept or decline it.
  case invitation(Invitation)
  /// A pending invitation went away unanswered (timeout, or the inviter left).
  case invitationWithdrawn(Peer, String)
  case connecting(Peer)
  /// A session is established: the peer is authenticated (its key owns its id).
  case connected(Peer, PeerSecurity)
  /// Our invitation was declined (`timeout` when nobody answered).
  case declined(Peer, DeclineReason)
  /// The session's connection was lost without a goodbye and the session waits to resume
  /// (PROTOCOL.md 6.5): `attempt` counts our attempts to reach the peer again (1, 2, ...),
  /// or is 0 when the peer is the one that reconnects and we wait for it. Messages sent
  /// meanwhile wait; the peer is reported disconnected only when the grace period ends.
  case reconnecting(Peer, attempt: Int)
  /// The session resumed on a new connection, without a new invitation: what either side had
  /// not received is sent again, and nothing is delivered twice.
  case reconnected(Peer)
  case disconnected(Peer, DisconnectReason)
  case message(ReceivedMessage)
  /// A peer's application took a message of ours (see ``DeliveryReport`` for all of them).
  case delivered(messageID: MessageID, to: Peer)
  /// The peer is offline: a federated relay keeps the message and delivers it when the peer
  /// connects again, at any site; `delivered` follows then (or an `expired` error).
  case queued(messageID: MessageID, to: Peer)
  case error(SessionError)
  /// A peer we are not connected to can be reached through a relay (messages to it work).
  case reachable(Peer, via: Peer)
  /// A peer reached through relays cannot be reached any more.
  case unreachable(Peer)
  /// Something about the session itself: listening, advertising, discovery trouble.
  case status(SessionStatus)
  /// Compare this code with the peer's person (on screen or aloud); `askedByPeer` when the
  /// peer's person asked for it. Equal codes: nobody is in the middle; then trust the peer.
  case verification(Peer, code: String, askedByPeer: Bool)
  /// The person confirmed the peer's code: its key is remembered as verified.
  case trusted(Peer)
  /// A peer presents itself under the name of a peer you verified, with another key: it is
  /// someone else (or the same person with a new identity). Nothing was trusted.
  case impostorWarning(Peer, verified: Peer)
  /// Files: an offer, a transfer that started, its progress, its end.
  case transfer(TransferEvent)
}

/// News about the session itself rather than about a peer.
public enum SessionStatus: Hashable, Sendable {
  /// The listener is up.
  case listening(port: UInt16)
  /// The advertisement is registered under this instance name.
  case advertised(name: String)
  /// Advertising failed (for example: no daemon); it is retried by itself.
  case advertisingFailed(String)
  /// Browsing failed (for example: no daemon); it is retried by itself.
  case browsingFailed(String)
  /// An instance of our service type that is not a Nearby peer.
  case foreignService(instance: String, reason: String)
  /// More instances of our service type were announced than discovery resolves and
  /// remembers (`limit`; a flood of forged ones?): the newest are left out until there is
  /// room, then looked for again. Once per crowding.
  case discoveryCrowded(limit: Int)
  /// A connection was closed for breaking the protocol (logged, not fatal).
  case connectionRejected(peer: Peer?, reason: String)
}

/// What the session asks its shell to do.
package enum SessionAction: Sendable {
  /// Open a TCP connection, trying the endpoints in order; report the outcome with
  /// ``SessionStateMachine/connectionEstablished(_:remote:now:into:)`` or
  /// ``SessionStateMachine/connectFailed(_:detail:now:into:)``.
  case connect(ConnectionID, [Endpoint])
  case send(ConnectionID, Frame)
  /// Send one message on several connections (encode it once).
  case sendMessage(Frame.Message, [ConnectionID])
  /// Send again, in order, messages that wait for their recipients' answers (a session
  /// resumed, a route back): queued whatever the connection's queue holds, since the resend
  /// window they come from bounds them already. (Queued like new messages, those past the
  /// queue's 4 MiB failed: a session that resumed with more waiting lost them.)
  case resendMessages([Frame.Message], ConnectionID)
  case close(ConnectionID, CloseAction)
  case emit(SessionEvent)
  /// ``emit(_:)`` of an event that starts something anew (a peer `reachable` that was not):
  /// what a reader far behind makes of it and a later `unreachable` is nothing at all.
  case emitFresh(SessionEvent)
  /// Hand a message to the application; acknowledge it (``SessionStateMachine/acknowledge(_:now:into:)``)
  /// once the application has taken it.
  case deliver(ReceivedMessage, from: ConnectionID)
  /// One of our messages is settled: every recipient confirmed it or failed.
  case settled(DeliveryReport)
  /// A step of a file transfer from `peer` (direct, or opened from its envelope), and the
  /// connection that carried it (the peer's own, or a relay's).
  case transferFrame(TransferFrame, from: PeerID, via: ConnectionID)
  /// Work for the federation (a federated relay only): see ``FederationOutput``.
  case federate(FederationOutput)
  /// The session with `peer` moved to a new connection that the peer opened to resume it,
  /// before we noticed the old one was lost (so no `reconnecting` or `reconnected` event).
  /// Our messages sent on the old connection go again from the resend window; what else we
  /// sent there may be lost: file transfers must send their offers again.
  case sessionMoved(PeerID)
}

/// A received message the application has taken, to acknowledge on its connection.
package struct TakenMessage: Hashable, Sendable {
  package let connection: ConnectionID
  package let origin: PeerID
  package let id: UInt64

  package init(connection: ConnectionID, origin: PeerID, id: UInt64) {
    self.connection = connection
    self.origin = origin
    self.id = id
  }
}

/// Counters of a relay, for its stats line.
public struct RelayStatistics: Hashable, Sendable {
  public var forwardedMessages: UInt64 = 0
  public var forwardedBytes: UInt64 = 0
  public var duplicatesDropped: UInt64 = 0
  public var unknownRecipients: UInt64 = 0
  public var hopLimitDrops: UInt64 = 0
  public var queueFullDrops: UInt64 = 0
  /// Messages and receipts that failed their end-to-end check (altered or invented on the
  /// way) and were dropped.
  public var forgeriesDropped: UInt64 = 0
  /// Relay connections closed for going over ``RosterLimits``.
  public var rosterLimitCloses: UInt64 = 0
  public init() {}
}

/// What the relays a session is connected to may tell it in rosters (PROTOCOL.md 8.3):
/// beyond these, the relay's connection is closed with ERROR `resourceExhausted`.
package struct RosterLimits: Hashable, Sendable {
  /// Peers one relay connection may give a relay (a peer takes up to ``peers`` from its relay).
  package var perRelay = 16_384
  /// Peers a relay knows in all (connected and reached through other relays); a peer that is
  /// not a relay may know twice as many (its relay's, and those it found itself).
  package var peers = 65_536
  /// ROSTER frames one relay may send at once ...
  package var burst = 256
  /// ... and per second after that.
  package var framesPerSecond = 64.0

  package init() {}
}
