// One file: the state the session machine owns (its records and their invariants) and the
// entry points that every extension (+Messages, +Relay, +Reconnect, +Transfers, +Federation)
// relies on; splitting the stored state from the code that keeps it consistent would hide
// the invariants. Behaviour by topic lives in the extensions.

/// The brain of a session, as a plain value: it owns what is known about peers, every
/// connection's protocol state, the invitations waiting for an answer and the messages
/// waiting for acknowledgement. Inputs are discoveries, connection outcomes, frames,
/// decisions and the time; outputs are ``SessionAction``s appended to an array. The session
/// actor only performs them, so everything here is tested without sockets or clocks.
package struct SessionStateMachine: Sendable {
  /// The settings of a session.
  package struct Configuration: Sendable {
    package var local: Peer
    package var capabilities: Capabilities = []
    package var acceptPolicy: AcceptPolicy = .ask
    /// Peers whose invitations are always accepted.
    package var allowList: Set<PeerID> = []
    package var timeouts = ConnectionTimeouts()
    /// What relays may tell us in rosters (PROTOCOL.md 8.3).
    package var rosterLimits = RosterLimits()
    /// The timeout of our invitations unless the caller gives one.
    package var invitationTimeout: Duration = .seconds(30)
    /// Connections that have not reached `connected`; more are refused with ERROR `busy`.
    package var maximumPendingConnections = 64
    /// Invitations waiting for an answer; more are declined with `busy`.
    package var maximumPendingInvitations = 32
    /// Connected peers; invitations beyond are declined with `busy`. `nil`: no limit.
    package var maximumPeers: Int?
    /// How many message identities relays (and peers behind relays) remember to drop copies.
    package var seenMessagesCapacity = 65_536
    /// Invite every peer that is found (relays: `--connect-found`).
    package var connectFound = false
    /// Sealing and opening of messages through relays (PROTOCOL.md 9.4).
    package var endToEnd: any EndToEndCrypto = NoEndToEndCrypto()
    /// Peers whose code the person compared (``AcceptPolicy/known`` accepts them).
    package var verifiedPeers: Set<PeerID> = []
    /// How long a session whose connection was lost waits to resume (PROTOCOL.md 6.5)
    /// before its peer is reported disconnected. Zero: sessions do not resume.
    package var reconnectGrace: Duration = .seconds(30)
    /// The most bytes of our messages one session keeps for resending; senders wait beyond.
    package var resendWindowBytes = 16 << 20
    /// A relay that federates sites (PROTOCOL.md 9.6); `nil`: not federated.
    package var federation: FederationSettings?

    package init(local: Peer) { self.local = local }

    /// Whether we are a relay (we forward messages and send rosters).
    package var isRelay: Bool { capabilities.contains(.relay) }
  }

  struct ConnectionRecord: Sendable {
    enum Direction: Sendable { case inbound, outbound }
    let direction: Direction
    /// `nil` while an outbound TCP connect is in progress.
    var machine: ConnectionStateMachine?
    /// The peer: the target of an outbound connection, or the sender of an inbound HELLO.
    var peerID: PeerID?
    /// Outbound: the INVITE to send once HELLO is done.
    var invite: Frame.Invite?
    /// Inbound: the invitation is kept unanswered while our own crossing attempt wins.
    var held = false
    /// Inbound: the invitation waits for the person's answer.
    var awaitingAnswer = false
    /// Inbound: the host it came from (an IPv4 address, an IPv6 /64), to share the slots
    /// of pending invitations fairly between hosts.
    var source: String?
    /// Messages sent on this connection and not yet acknowledged.
    var unacked = ResendWindow()
    /// Outbound: where we dialled.
    var endpoints: [Endpoint] = []
    /// Outbound: the endpoint that answered (with the handshake of the peer we dialled,
    /// when several were tried).
    var reached: Endpoint?
    /// The peer on this connection is a relay.
    var toRelay = false
    /// What the handshake proved about the peer.
    var authenticated: AuthenticatedPeer?
    /// A relay's connection: the peers we reach through it (routes it gave us).
    var rosterRoutes = 0
    /// A relay's connection: ROSTER frames it may still send us (``RosterLimits``).
    var rosterTokens = TokenBucket()
    /// Our ROSTER frames to this peer (when we are a relay): those we may send now (see
    /// ``SessionStateMachine/rosterPace``), and the entries of peers whose changes wait to go
    /// together (the latest of each).
    var rosterSendTokens = TokenBucket()
    var rosterWaiting: [PeerID: Frame.Roster.Entry] = [:]
    /// When the peer's last VERIFY was shown (at most one each ``verificationRequestInterval``).
    var verificationShown: Duration?
    /// Reports of this relay's tampering it may still make (see
    /// ``SessionStateMachine/tamperingReports``), and how many were not shown since the last.
    var tamperingTokens = TokenBucket()
    var tamperingHidden = 0
  }

  struct PeerRecord: Sendable {
    var peer: Peer
    var discovered: DiscoveredPeer?
    /// The connection of the established session.
    var session: ConnectionID?
    /// Our own attempt (connecting, handshaking or inviting).
    var outbound: ConnectionID?
    /// Relay connections through which the peer can be reached, with the hop count.
    var routes: [ConnectionID: UInt8] = [:]
    /// The peer said it is a relay.
    var isRelay = false
    /// We reported it reachable through a relay (and not unreachable since).
    var announcedReachable = false
    /// Its Ed25519 public key, once a handshake proved it (the key owns the peer's id).
    var publicKey: [UInt8]?
    /// The verification code of the handshake of its current session.
    var verificationCode: String?

    /// The best relay route, if any (fewest hops, then lowest id: deterministic).
    var bestRoute: ConnectionID? {
      routes.min { ($0.value, $0.key) < ($1.value, $1.key) }?.key
    }
  }

  package internal(set) var configuration: Configuration
  var connections: [ConnectionID: ConnectionRecord] = [:]
  var peers: [PeerID: PeerRecord] = [:]
  /// Invitations waiting for the person's answer, oldest first.
  package internal(set) var pendingInvitations: [Invitation] = []
  private var nextConnection: UInt64 = 1
  private var nextInvitationID: UInt64
  var nextMessageID: UInt64
  package internal(set) var isShuttingDown = false
  /// Messages already seen (relays, and peers with a relay connection).
  var seen: SeenMessages
  /// Messages we sent through relays and their expected recipients → route.
  var relayPending: [UInt64: [PeerID: ConnectionID]] = [:]
  /// What we sent through relays whose sessions can resume, per relay, until its recipients
  /// answered (SessionStateMachine+RelayResend.swift).
  var relayInFlight: [PeerID: RelayInFlight] = [:]
  /// When roster changes that had to wait go to the peers they wait for (a relay).
  var rosterFlushDue: Duration?
  /// Recipients behind relays that became unreachable while messages of ours waited for
  /// their answers: noticed (the deadline is set at the next tick), and given up on when.
  var relayedAwayNoticed: Set<PeerID> = []
  var relayedAwayDeadlines: [PeerID: Duration] = [:]
  /// Our own messages until every recipient has answered.
  var ledger = DeliveryLedger()
  /// Whether settled messages are reported (``SessionAction/settled(_:)``): only while the
  /// shell has someone waiting for a report, to spare the per-message work otherwise.
  package var reportsSettlements = false
  /// What a relay forwarded and dropped.
  package internal(set) var relayStatistics = RelayStatistics()
  /// Peers the session invites by itself, with their backoff.
  var autoConnect: [PeerID: AutoConnect] = [:]
  /// Numbers the peers as they join ``autoConnect`` (the longest waiting goes first).
  var autoConnectSequence: UInt64 = 0
  /// Peers whose session the network took (a silence, a lost connection; not an ERROR or a
  /// GOODBYE), and when: for ``resumableWindow``, their invitations are accepted without
  /// asking, within what the accept policy allows (see ``acceptsAgain(_:now:)``).
  var resumable: [PeerID: Duration] = [:]
  /// Sessions that outlive their connections (PROTOCOL.md 6.5).
  var reconnection = Reconnection()
  /// Peers behind the federation, sites, receipts to send again (SessionStateMachine+Federation).
  var federation = FederationState()

  /// - Parameters:
  ///   - configuration: who we are and how we answer.
  ///   - seed: the first message id and invitation id; pass random values (tests pass fixed ones).
  ///   Message ids start below 2³¹ so they stay exact in JSON numbers (2⁵³) for a very long
  ///   time while still differing between runs (PROTOCOL.md section 2.4).
  package init(
    configuration: Configuration, messageIDSeed: UInt64 = UInt64.random(in: 1...(1 << 31)),
    invitationIDSeed: UInt64 = UInt64.random(in: 0...UInt64.max)
  ) {
    self.configuration = configuration
    self.nextMessageID = messageIDSeed
    self.nextInvitationID = invitationIDSeed
    self.seen = SeenMessages(capacity: configuration.seenMessagesCapacity)
  }

  package var localPeer: Peer { configuration.local }

  /// Changes the accept policy and allow-list (for example after SIGHUP).
  package mutating func setAcceptPolicy(_ policy: AcceptPolicy, allowList: Set<PeerID>) {
    configuration.acceptPolicy = policy
    configuration.allowList = allowList
  }

  /// Peers with an established session.
  package var connectedPeers: [Peer] {
    peers.values.filter { $0.session != nil }.map(\.peer).sorted { $0.name.value < $1.name.value }
  }

  /// Whether any peer is reached through a relay, or any session is with a relay.
  package var hasRelayRoutes: Bool {
    connections.values.contains { $0.toRelay } || peers.values.contains { !$0.routes.isEmpty }
  }

  /// Peers reached through a relay (not directly connected), with the relay.
  package var relayedPeers: [(peer: Peer, via: Peer)] {
    peers.values.compactMap { record -> (Peer, Peer)? in
      guard record.session == nil else { return nil }
      if let route = record.bestRoute, let relay = connectionPeer(route) { return (record.peer, relay) }
      // Behind a relay that is away for a moment: messages to it wait for the relay.
      if let stranded = strandedRoute(record.peer.id), let relay = peers[stranded.relay]?.peer { return (record.peer, relay) }
      return nil
    }.sorted { $0.0.name.value < $1.0.name.value }
  }

  /// Peers currently seen through DNS-SD.
  package var discoveredPeers: [DiscoveredPeer] {
    peers.values.compactMap(\.discovered).sorted { $0.peer.name.value < $1.peer.name.value }
  }

  /// What we know of a peer (its latest name).
  package func peer(_ id: PeerID) -> Peer? { peers[id]?.peer }

  /// Whether a session with the peer is established.
  package func isConnected(_ id: PeerID) -> Bool { peers[id]?.session != nil }

  /// The connection carrying the session with a peer.
  package func sessionConnection(_ id: PeerID) -> ConnectionID? { peers[id]?.session }

  /// The peer on a connection, once known.
  package func connectionPeer(_ id: ConnectionID) -> Peer? {
    connections[id]?.peerID.flatMap { peers[$0]?.peer }
  }

  /// Connections that exist (any state), for the shell's bookkeeping.
  package var connectionIDs: [ConnectionID] { Array(connections.keys) }

  /// The connection's protocol state, if it exists.
  package func connectionState(_ id: ConnectionID) -> ConnectionStateMachine.State? {
    connections[id]?.machine?.state
  }

  /// How many sent messages wait for acknowledgement on a connection.
  package func unacknowledgedCount(_ id: ConnectionID) -> Int { connections[id]?.unacked.count ?? 0 }

  // MARK: Discovery

  /// The browser found a peer or saw it change.
  package mutating func discovered(_ found: DiscoveredPeer, into actions: inout [SessionAction]) {
    let id = found.peer.id
    guard id != localPeer.id else { return }
    if var record = peers[id] {
      let isNew = record.discovered == nil
      record.discovered = found
      if record.session == nil {
        record.peer = found.peer
      } else {
        record.peer.info = found.peer.info
      }
      // Whether a peer with a session is a relay is what its HELLO said (PROTOCOL.md 4.1): a
      // DNS-SD record, which anybody can publish with its id, does not change it (a forged
      // `relay=1` made messages to everyone skip the peer, and one to it alone go untracked).
      if record.session == nil, !isSuspended(id) { record.isRelay = record.isRelay || found.advertisement.isRelay }
      peers[id] = record
      // A peer in a session is reported by the name its handshake proved: a record with its
      // id and another name retitled its conversation in the chat.
      var shown = found
      if record.session != nil || isSuspended(id) { shown.advertisement.peer = shown.advertisement.peer.renamed(record.peer.name) }
      actions.append(.emit(isNew ? .found(shown) : .updated(shown)))
      if isNew { autoConnectOnDiscovery(id) }
    } else {
      var record = PeerRecord(peer: found.peer, discovered: found)
      record.isRelay = found.advertisement.isRelay
      peers[id] = record
      actions.append(.emit(.found(found)))
      autoConnectOnDiscovery(id)
    }
  }

  /// The browser lost the last instance of a peer.
  package mutating func lost(_ id: PeerID, into actions: inout [SessionAction]) {
    guard var record = peers[id], record.discovered != nil else { return }
    record.discovered = nil
    actions.append(.emit(.lost(record.peer)))
    peers[id] = record
    // Kept while anything else holds it: a session, a connection, a relay's route (a peer
    // reachable through a relay was forgotten when its LAN record went, and the relay's
    // count of the routes it gave crept up with each such loss).
    forgetIfIdle(id)
  }

  private func hasConnections(to id: PeerID) -> Bool {
    connections.values.contains { $0.peerID == id }
  }

  // MARK: Inviting

  /// Invites a known peer: connects to its endpoints, then sends INVITE.
  /// Inviting a connected peer or one we already invite does nothing but say so; inviting a
  /// peer whose own invitation waits for our answer accepts it.
  package mutating func invite(_ id: PeerID, context: [UInt8], timeout: Duration? = nil, now: Duration, into actions: inout [SessionAction]) {
    guard !isShuttingDown else { return }
    guard let record = peers[id] else {
      actions.append(.emit(.error(.rejected("unknown peer \(id.hex): it has not been found on the network"))))
      return
    }
    if record.session != nil {
      actions.append(.emit(.error(.rejected("already connected to \(record.peer)"))))
      return
    }
    if let reconnecting = reconnectingRejection(id) {
      actions.append(.emit(.error(.rejected(reconnecting))))
      return
    }
    if record.outbound != nil {
      actions.append(.emit(.error(.rejected("already inviting \(record.peer)"))))
      return
    }
    if let pending = pendingInvitations.first(where: { $0.peer.id == id }) {
      accept(pending.connection, now: now, into: &actions)
      return
    }
    guard let endpoints = record.discovered?.endpoints, !endpoints.isEmpty else {
      actions.append(.emit(.error(.rejected("\(record.peer) has no known address: wait until it is found again"))))
      return
    }
    if let version = record.discovered?.advertisement.protocolVersion, version < ProtocolLimits.version {
      actions.append(
        .emit(
          .error(
            .rejected(
              "\(record.peer) runs an older Nearby (protocol version \(version), unencrypted): it must upgrade to version \(ProtocolLimits.version) before you can connect"
            ))))
      return
    }
    guard let invite = makeInvite(context: context, timeout: timeout, into: &actions) else { return }
    let connection = newConnectionID()
    connections[connection] = ConnectionRecord(direction: .outbound, peerID: id, invite: invite, endpoints: endpoints)
    peers[id]?.outbound = connection
    actions.append(.connect(connection, endpoints))
    actions.append(.emit(.connecting(record.peer)))
  }

  /// Invites whoever listens at `endpoints` (a peer not found through DNS-SD).
  package mutating func invite(endpoints: [Endpoint], context: [UInt8], timeout: Duration? = nil, into actions: inout [SessionAction]) {
    guard !isShuttingDown, !endpoints.isEmpty else { return }
    guard let invite = makeInvite(context: context, timeout: timeout, into: &actions) else { return }
    let connection = newConnectionID()
    connections[connection] = ConnectionRecord(direction: .outbound, peerID: nil, invite: invite, endpoints: endpoints)
    actions.append(.connect(connection, endpoints))
  }

  private mutating func makeInvite(context: [UInt8], timeout: Duration?, into actions: inout [SessionAction]) -> Frame.Invite? {
    guard context.count <= ProtocolLimits.maximumContextLength else {
      actions.append(.emit(.error(.rejected("the invitation context is \(context.count) bytes, more than 65535"))))
      return nil
    }
    let requested = timeout ?? configuration.invitationTimeout
    let milliseconds = requested.components.seconds * 1000 + requested.components.attoseconds / 1_000_000_000_000_000
    let range = ProtocolLimits.invitationTimeoutRange
    guard milliseconds >= Int64(range.lowerBound), milliseconds <= Int64(range.upperBound) else {
      actions.append(.emit(.error(.rejected("an invitation timeout must be between 0.1 s and 600 s"))))
      return nil
    }
    let invitationID = nextInvitationID
    nextInvitationID &+= 1
    return Frame.Invite(invitationID: invitationID, timeoutMilliseconds: UInt32(milliseconds), context: context)
  }

  /// Ids of connections we open have the top bit set, so they never collide with the ids a
  /// listener gives the connections it accepts (counted from 1).
  private mutating func newConnectionID() -> ConnectionID {
    defer { nextConnection += 1 }
    return ConnectionID(1 << 63 | nextConnection)
  }

  // MARK: Connection lifecycle

  /// The outbound TCP connection is up: the handshake runs (its payload is our HELLO,
  /// ``helloPayload``); ``authenticated(_:_:now:into:)`` follows.
  /// - Parameter remote: the endpoint that answered.
  package mutating func connectionEstablished(_ id: ConnectionID, remote: Endpoint? = nil, now: Duration, into actions: inout [SessionAction]) {
    guard var record = connections[id], record.machine == nil else { return }
    record.reached = remote
    var machine = ConnectionStateMachine(
      role: .connector(expecting: record.peerID), hello: localHello, timeouts: configuration.timeouts, now: now)
    machine.start(now: now)
    record.machine = machine
    connections[id] = record
  }

  /// No endpoint answered.
  package mutating func connectFailed(_ id: ConnectionID, detail: String, now: Duration, into actions: inout [SessionAction]) {
    guard let record = connections.removeValue(forKey: id) else { return }
    if reconnectAttemptEnded(id, peerID: record.peerID, now: now) { return }
    let peer = record.peerID.flatMap { peers[$0]?.peer }
    if let peerID = record.peerID, peers[peerID]?.outbound == id {
      peers[peerID]?.outbound = nil
      actions.append(.emit(.error(.connectFailed(peer: peer, detail: detail))))
      acceptHeldInvitation(from: peerID, now: now, into: &actions)
      forgetIfIdle(peerID)
    } else {
      actions.append(.emit(.error(.connectFailed(peer: peer, detail: detail))))
    }
  }

  /// A peer connected to our listener: the handshake runs (or the connection is refused
  /// when too many are still handshaking).
  /// - Parameter source: the host it came from (``SourceAdmission``'s key), if known.
  package mutating func connectionAccepted(_ id: ConnectionID, source: String? = nil, now: Duration, into actions: inout [SessionAction]) {
    var machine = ConnectionStateMachine(role: .listener, hello: localHello, timeouts: configuration.timeouts, now: now)
    machine.start(now: now)
    // Connections being set up: handshaking, idle, inviting or invited (PROTOCOL.md 8.3). Not
    // those closing: a host that sent a bad handshake and never closed its end kept each of
    // them here for the linger (2 s), and 64 of them refused everybody else. Closing ones
    // count against their source instead (NearbySession.admit), until they are gone.
    let pending = connections.values.filter { $0.machine.map { $0.state != .connected && $0.state != .closing && $0.state != .closed } ?? true }.count
    if isShuttingDown || pending >= configuration.maximumPendingConnections {
      let transition = machine.reject(.busy, "too many connections are being set up; try again later", now: now)
      connections[id] = ConnectionRecord(direction: .inbound, machine: machine)
      perform(transition, on: id, now: now, into: &actions)
      return
    }
    connections[id] = ConnectionRecord(direction: .inbound, machine: machine, source: source)
  }

  /// Reserves an id for a connection the listener accepted.
  package mutating func reserveConnectionID() -> ConnectionID { newConnectionID() }

  var localHello: Frame.Hello {
    let version = UInt8(ProtocolLimits.version)
    let capabilities = configuration.capabilities.union(offersResumption ? .resume : [])
    return Frame.Hello(minVersion: version, maxVersion: version, capabilities: capabilities, peer: localPeer)
  }

  /// What our handshakes carry (encrypted) as their payload: our HELLO frame.
  package var helloPayload: [UInt8] { FrameEncoder.encode(.hello(localHello)) }

  /// The peer we mean to reach on an outbound connection, when we know it.
  package func expectedPeer(of id: ConnectionID) -> PeerID? { connections[id]?.peerID }

  /// Frames from a connection, in order. Messages among them are acknowledged once the
  /// application has taken them (``acknowledge(_:now:into:)``).
  package mutating func received(_ frames: [Frame], on id: ConnectionID, now: Duration, into actions: inout [SessionAction]) {
    for frame in frames {
      guard let transition = updateConnection(id, { $0.machine?.receive(frame, now: now) }) ?? nil else { break }
      perform(transition, on: id, now: now, into: &actions)
    }
  }

  /// The shell stopped (or resumed) reading a connection because the application is behind:
  /// the peer is not timed out for the silence that causes.
  package mutating func readingPaused(_ id: ConnectionID, _ paused: Bool, now: Duration) {
    updateConnection(id) { $0.machine?.readingPaused(paused, now: now) }
  }

  /// The bytes of a connection could not be decoded.
  package mutating func receiveFailed(_ error: FrameDecodingError, on id: ConnectionID, now: Duration, into actions: inout [SessionAction]) {
    guard connections[id]?.machine != nil else { return }
    let transition = connections[id]!.machine!.receiveFailed(error, now: now)
    perform(transition, on: id, now: now, into: &actions)
  }

  /// The connection reached EOF or failed.
  package mutating func connectionClosed(_ id: ConnectionID, detail: String, now: Duration, into actions: inout [SessionAction]) {
    guard connections[id] != nil else { return }
    guard connections[id]!.machine != nil else {
      connectFailed(id, detail: detail, now: now, into: &actions)
      return
    }
    let transition = connections[id]!.machine!.connectionLost(detail)
    perform(transition, on: id, now: now, into: &actions)
    // Whatever the machine said, the socket is gone.
    if connections[id] != nil { removeConnection(id, reason: .connectionLost(detail), now: now, into: &actions) }
  }

  // MARK: Time

  /// The earliest deadline of any connection or automatic invitation.
  package var nextDeadline: Duration? {
    let connection = connections.values.compactMap { $0.machine?.nextDeadline }.min()
    let automatic = [autoConnect.values.map(\.nextAttempt).min(), reconnectionDeadline, rosterFlushDue].compactMap { $0 }.min()
    switch (connection, automatic) {
    case (let a?, let b?): return min(a, b)
    case (let a?, nil): return a
    case (nil, let b?): return b
    case (nil, nil): return nil
    }
  }

  /// Runs every connection's timers.
  package mutating func tick(now: Duration, into actions: inout [SessionAction]) {
    for id in connections.keys.sorted() {
      guard let deadline = connections[id]?.machine?.nextDeadline, deadline <= now else { continue }
      let transition = connections[id]!.machine!.tick(now: now)
      perform(transition, on: id, now: now, into: &actions)
    }
    runAutoConnect(now: now, into: &actions)
    runReconnection(now: now, into: &actions)
    runRelayedAway(now: now, into: &actions)
    sendWaitingRosters(now: now, into: &actions)
  }

  // MARK: Performing transitions

  mutating func perform(_ transition: ConnectionTransition, on id: ConnectionID, now: Duration, into actions: inout [SessionAction]) {
    if let frame = transition.send { actions.append(.send(id, frame)) }
    if let event = transition.event { handle(event, on: id, now: now, into: &actions) }
    if let close = transition.close {
      actions.append(.close(id, close))
      if close == .now, connections[id] != nil {
        removeConnection(id, reason: nil, now: now, into: &actions)
      }
    }
  }

  /// Forgets a connection whose socket is closed, reporting what ended with it.
  mutating func removeConnection(_ id: ConnectionID, reason: DisconnectReason?, now: Duration, into actions: inout [SessionAction]) {
    guard var record = connections.removeValue(forKey: id) else { return }
    if let reason { connectionEnded(&record, id: id, reason: reason, now: now, into: &actions) }
    failUnacknowledged(&record, reason: .connectionClosed(reason ?? .closedWhileClosing), into: &actions)
  }
}
