import NearbyCore
import NearbyCrypto
import NearbyDiscovery
import NearbySystem
import NearbyTransport
import Synchronization

/// A Nearby session: it listens for peers, advertises us and browses for peers (unless told
/// not to), sends and answers invitations, and carries messages — MultipeerConnectivity's
/// `MCSession`, advertiser and browser made async.
///
/// ```swift
/// let session = try NearbySession(configuration: SessionConfiguration(identity: identity, name: name))
/// try await withThrowingTaskGroup(of: Void.self) { group in
///   group.addTask { try await session.run() }
///   for await event in session.events { ... }
///   try await group.waitForAll()  // rethrows what run() threw
/// }
/// ```
///
/// ``run()`` is the session's life: call it once; it returns after ``shutdown()`` (or
/// cancellation) has said goodbye to every peer, withdrawn the advertisement and closed every
/// socket and thread it made. Everything that happens comes out of ``events``, which several
/// consumers can read.
///
/// The actor runs on its own I/O thread (``executor``): frames go from the socket through
/// the decoder and the protocol's state machines to ``events`` without changing threads,
/// and what it sends is written once per loop iteration. It alone owns peers, invitations,
/// connections and routes.
public actor NearbySession {
  public nonisolated let configuration: SessionConfiguration
  /// Everything that happens, in order; several consumers may read it.
  public nonisolated var events: SessionEvents { SessionEvents(hub: hub, loop: loop) }
  /// The session's I/O thread as a task executor: a task that prefers it
  /// (`withTaskExecutorPreference(session.executor) { ... }`) reads events and sends
  /// messages without a thread switch.
  public nonisolated var executor: any TaskExecutor { taskExecutor }

  public nonisolated var unownedExecutor: UnownedSerialExecutor { loop.asUnownedSerialExecutor() }

  nonisolated let loop: EventLoop
  nonisolated let taskExecutor: EventLoopTaskExecutor
  nonisolated let hub: EventHub
  // The stored properties below are `@exclusivity(unchecked)`: only the session's loop thread
  // (its executor) uses them, and the runtime's check of every access to a class's property
  // was about a tenth of the instructions of a message's round trip (callgrind; see the
  // README's benchmarks).
  /// The session's state. Read it through ``inspect(_:)`` in code that runs per message: a
  /// non-mutating method called on it directly copies the whole struct first.
  @exclusivity(unchecked) var machine: SessionStateMachine
  let start = ContinuousClock.now
  @exclusivity(unchecked) var listener: TCPListener?
  @exclusivity(unchecked) var advertiser: Advertiser?
  @exclusivity(unchecked) var browser: Browser?
  @exclusivity(unchecked) var connections: [ConnectionID: TCPConnection] = [:]
  @exclusivity(unchecked) var connectors: [ConnectionID: TCPConnector] = [:]
  @exclusivity(unchecked) var shutdownRequested = false
  @exclusivity(unchecked) var state = RunState.idle
  @exclusivity(unchecked) var transportSink: TransportSink?
  /// Our identity and HELLO, for every connection's handshake.
  let security: ConnectionSecurity
  /// Limits on what peers may cost us (NearbySession+Limits.swift).
  let guards: SessionGuards
  @exclusivity(unchecked) var tickTimer: UInt64?
  /// What the application took and the senders were not told yet, and its timer (see
  /// ``acknowledgeTaken()``).
  @exclusivity(unchecked) var pendingAcknowledgements: [TakenMessage] = []
  @exclusivity(unchecked) var pendingAcknowledgementBytes = 0
  @exclusivity(unchecked) var acknowledgementTimer: UInt64?
  /// Senders waiting for room on one of these connections (the send side of the session):
  /// woken when one drains or closes, then they try again. Senders to other connections are
  /// not held up, so one slow peer never stalls messages to the others.
  @exclusivity(unchecked) var sendWaiters = Waiters<[ConnectionID], Bool>()
  /// Senders waiting for room in the resend window of one of these peers (their messages
  /// are kept until acknowledged, to resend them after a reconnection).
  @exclusivity(unchecked) var windowWaiters = Waiters<[PeerID], Bool>()
  /// Callers of ``delivery(of:)`` waiting for a message to settle.
  @exclusivity(unchecked) var deliveryWaiters = Waiters<MessageID, DeliveryReport?>()
  /// Callers of ``waitForDeliveries()``.
  @exclusivity(unchecked) var idleWaiters = Waiters<Int, Void>()
  @exclusivity(unchecked) private var waiterTokens: UInt64 = 0
  /// Received messages handed to the application and not yet taken, per connection.
  @exclusivity(unchecked) var untaken: [ConnectionID: (messages: Int, bytes: Int)] = [:]
  @exclusivity(unchecked) var shutdownWaiters: [CheckedContinuation<Void, Never>] = []
  @exclusivity(unchecked) var readyWaiters: [CheckedContinuation<UInt16?, Never>] = []
  /// File transfers, ours and theirs (NearbySession+Files.swift).
  @exclusivity(unchecked) var files = FileTransfers()
  private nonisolated let inboundIDs = Atomic<UInt64>(1)
  /// Where a federated relay's ``FederationOutput``s go (NearbySession+Federation).
  @exclusivity(unchecked) var federationLink: (any FederationLink)?
  nonisolated let shutdownGate = Gate()
  /// Storage kept between the per-message calls (see ``takeActions()``).
  @exclusivity(unchecked) var spareActions: [SessionAction] = []
  /// Received messages and receipts ``perform(taking:)`` gathers to publish at once (see
  /// ``flushPublishing()``).
  @exclusivity(unchecked) var publishing: [EventHub.Publication] = []
  /// The array ``acknowledgeTaken()`` swaps with the hub's settled claims.
  @exclusivity(unchecked) var spareClaims: [MessageClaim] = []

  enum RunState { case idle, running, stopped }

  /// - Throws: ``SystemError`` when the I/O thread cannot be created (no descriptors left).
  public init(configuration: SessionConfiguration) throws {
    self.configuration = configuration
    let loop = try EventLoop(name: "nearby-io", busyPoll: configuration.busyPoll)
    self.loop = loop
    self.taskExecutor = EventLoopTaskExecutor(loop)
    var core = SessionStateMachine.Configuration(local: configuration.peer)
    // Every session understands what federated relays send (sites in rosters, `queued`).
    core.capabilities = configuration.isRelay ? [.relay, .federation] : [.files, .federation]
    core.federation = configuration.isRelay ? configuration.federation : nil
    core.acceptPolicy = configuration.acceptPolicy
    core.allowList = configuration.allowList
    core.timeouts = configuration.timeouts
    core.invitationTimeout = configuration.invitationTimeout
    core.maximumPeers = configuration.maximumPeers
    core.rosterLimits = configuration.rosterLimits
    core.maximumPendingConnections = configuration.maximumPendingConnections
    core.maximumPendingInvitations = configuration.maximumPendingInvitations
    core.connectFound = configuration.connectFound
    core.reconnectGrace = configuration.reconnectGrace
    core.resendWindowBytes = configuration.resendWindowBytes
    core.endToEnd = SessionEndToEnd(identity: configuration.identity.keyPair)
    core.verifiedPeers = configuration.identity.verifiedPeerIDs
    machine = SessionStateMachine(configuration: core)
    security = ConnectionSecurity(identity: configuration.identity.keyPair, payload: machine.helloPayload)
    guards = SessionGuards(configuration)
    let settled = ClaimsSettledSignal()
    hub = EventHub(onClaimsSettled: { settled.fire() })
    settled.session = self
  }

  /// A session dropped without running stops its I/O thread (started in `init`; only `run()`
  /// stopped it, and each such session left a thread and three descriptors behind).
  deinit { loop.requestStop() }

  // MARK: Running

  /// Runs the session until ``shutdown()`` or cancellation.
  /// - Throws: ``SystemError`` when the listener cannot start; ``SessionUsageError`` when
  ///   called twice.
  public func run() async throws {
    guard state == .idle else { throw SessionUsageError("run() was already called on this session") }
    state = .running
    // Transport and discovery events arrive on the loop thread, which is this actor's executor.
    let sink: TransportSink = { event in self.handleOnLoop(event) }
    transportSink = sink
    do {
      listener = try await TCPListener.bind(
        host: configuration.listenHost, port: configuration.listenPort, loop: loop, maximumQueuedBytes: configuration.maximumQueuedBytes,
        limits: guards.limits, admit: admissionCheck, security: security, nextID: { [self] in ConnectionID(nextInboundID()) }, sink: sink)
      if configuration.advertise {
        let advertisement = PeerAdvertisement(peer: configuration.peer, isRelay: configuration.isRelay, info: configuration.discoveryInfo)
        advertiser = try Advertiser(advertisement: advertisement, serviceType: configuration.serviceType, port: listener!.port, loop: loop) {
          event in self.whileOnLoop { $0.handle(event) }
        }
      }
    } catch {
      listener?.close()
      listener = nil
      transportSink = nil
      await loop.shutdown()
      finishReady(nil)
      state = .stopped
      hub.finish()
      // A shutdown() that came while the listener was starting waited for run() to end.
      let waiters = shutdownWaiters
      shutdownWaiters = []
      for waiter in waiters { waiter.resume() }
      throw error
    }
    let port = listener!.port
    emit(.status(.listening(port: port)))
    startFileTransfers()
    finishReady(port)
    advertiser?.start()
    if configuration.browse {
      browser = Browser(
        serviceType: configuration.serviceType, localPeer: configuration.peer.id, includeOwnPeer: configuration.includeOwnAdvertisement,
        loop: loop
      ) { event in self.whileOnLoop { $0.handle(event) } }
      browser?.start()
    }
    scheduleTick(after: .zero)

    let gate = shutdownGate
    await withTaskCancellationHandler {
      await gate.wait()
    } onCancel: {
      gate.open()
    }
    await performShutdown()
    // Received messages still held back for fairness reach the application before the end.
    flushPublishing()
    if !guards.heldBack.isEmpty { releaseAllHeldBack() }
    transportSink = nil
    await loop.shutdown()
    state = .stopped
    hub.finish()
  }

  /// Waits until the listener is up. - Returns: its port, or `nil` if the session failed to start.
  public func waitUntilListening() async -> UInt16? {
    if let listener { return listener.port }
    if state == .stopped { return nil }
    return await withCheckedContinuation { readyWaiters.append($0) }
  }

  func nextWaiterToken() -> UInt64 {
    waiterTokens += 1
    return waiterTokens
  }

  private nonisolated func nextInboundID() -> UInt64 { inboundIDs.add(1, ordering: .relaxed).oldValue }

  private func finishReady(_ port: UInt16?) {
    for waiter in readyWaiters { waiter.resume(returning: port) }
    readyWaiters = []
  }

  /// Leaves every peer (GOODBYE), declines pending invitations, withdraws the advertisement
  /// and closes everything; ``run()`` then returns. Idempotent.
  public func shutdown() async {
    if !shutdownRequested {
      shutdownRequested = true
      shutdownGate.open()
    }
    guard state == .running else { return }
    await withCheckedContinuation { continuation in
      if state != .running {
        continuation.resume()
      } else {
        shutdownWaiters.append(continuation)
      }
    }
  }

  private func performShutdown() async {
    shutdownRequested = true
    if let tickTimer { loop.cancelTimer(tickTimer) }
    tickTimer = nil
    advertiser?.finish()
    browser?.finish()
    listener?.close()
    for waiter in sendWaiters.removeAll(where: { _ in true }) { waiter.resume(returning: true) }
    for waiter in windowWaiters.removeAll(where: { _ in true }) { waiter.resume(returning: true) }
    stopFileTransfers()
    // What the application took is acknowledged before the GOODBYEs (or it comes again).
    acknowledgeTaken()
    sendAcknowledgements()
    var actions: [SessionAction] = []
    machine.shutdown(now: now, into: &actions)
    perform(taking: &actions)
    // Give the GOODBYEs a moment to leave (bounded: a stuck peer cannot hold us).
    let deadline = ContinuousClock.now + .seconds(1)
    while ContinuousClock.now < deadline, connections.values.contains(where: { $0.queuedBytes > 0 }) {
      try? await Task.sleep(for: .milliseconds(5))
    }
    for connector in connectors.values { connector.cancel() }
    connectors.removeAll()
    for connection in connections.values { connection.close(.now) }
    connections.removeAll()
    listener = nil
    for waiter in sendWaiters.removeAll(where: { _ in true }) { waiter.resume(returning: true) }
    for waiter in windowWaiters.removeAll(where: { _ in true }) { waiter.resume(returning: true) }
    for waiter in deliveryWaiters.removeAll(where: { _ in true }) { waiter.resume(returning: nil) }
    for waiter in idleWaiters.removeAll(where: { _ in true }) { waiter.resume() }
    // What was learnt about peers reaches the file before run() returns.
    configuration.identity.waitForSaves()
    let waiters = shutdownWaiters
    shutdownWaiters = []
    state = .stopped
    for waiter in waiters { waiter.resume() }
  }

  var now: Duration { ContinuousClock.now - start }

  // MARK: Invitations

  /// Invites a peer found through DNS-SD (or one the session knows from a relay).
  /// Problems (an unknown peer, one already connected) come as `SessionEvent.error(_:)`.
  /// - Parameters:
  ///   - peer: the peer's id, from a `SessionEvent.found(_:)` event or ``discoveredPeers``.
  ///   - context: shown to the invitee (at most 65 535 bytes).
  ///   - timeout: how long the invitee has to answer (default ``SessionConfiguration/invitationTimeout``).
  public func invite(_ peer: PeerID, context: [UInt8] = [], timeout: Duration? = nil) {
    var actions: [SessionAction] = []
    machine.invite(peer, context: context, timeout: timeout, now: now, into: &actions)
    perform(taking: &actions)
  }

  /// Invites a peer that a ``NearbyBrowser`` found (the session need not browse itself).
  public func invite(_ discovered: DiscoveredPeer, context: [UInt8] = [], timeout: Duration? = nil) {
    var actions: [SessionAction] = []
    if machine.peer(discovered.peer.id) == nil || !machine.discoveredPeers.contains(where: { $0.peer.id == discovered.peer.id }) {
      machine.discovered(discovered, into: &actions)
    }
    machine.invite(discovered.peer.id, context: context, timeout: timeout, now: now, into: &actions)
    perform(taking: &actions)
  }

  /// Invites whoever listens at `endpoints` (no DNS-SD needed).
  public func invite(endpoints: [Endpoint], context: [UInt8] = [], timeout: Duration? = nil) {
    var actions: [SessionAction] = []
    machine.invite(endpoints: endpoints, context: context, timeout: timeout, into: &actions)
    perform(taking: &actions)
  }

  /// Accepts the oldest pending invitation from `peer`.
  public func accept(_ peer: PeerID) {
    var actions: [SessionAction] = []
    machine.accept(peer: peer, now: now, into: &actions)
    perform(taking: &actions)
  }

  /// Declines the oldest pending invitation from `peer`.
  public func decline(_ peer: PeerID) {
    var actions: [SessionAction] = []
    machine.decline(peer: peer, now: now, into: &actions)
    perform(taking: &actions)
  }

  /// Ends the session with one peer (or withdraws our invitation to it).
  public func leave(_ peer: PeerID) {
    var actions: [SessionAction] = []
    machine.leave(peer, now: now, into: &actions)
    perform(taking: &actions)
  }

  // MARK: What the session knows

  /// Connected peers, by name.
  public var connectedPeers: [Peer] { machine.connectedPeers }
  /// Peers whose session lost its connection and waits to resume (`SessionEvent.reconnecting`),
  /// by name. Messages to them wait and go out when the session is back.
  public var reconnectingPeers: [Peer] { machine.reconnectingPeers }
  /// Peers reached through a relay (not connected to us), by name, with the relay.
  public var relayedPeers: [(peer: Peer, via: Peer)] { machine.relayedPeers }
  /// Peers seen through DNS-SD, by name.
  public var discoveredPeers: [DiscoveredPeer] { machine.discoveredPeers }
  /// Invitations waiting for an answer, oldest first.
  public var pendingInvitations: [Invitation] { machine.pendingInvitations }
  /// What this session forwarded and dropped as a relay.
  public var relayStatistics: RelayStatistics { machine.relayStatistics }
  /// Bytes waiting in each connection's send queue (largest first).
  public var queueDepths: [Int] { connections.values.map(\.queuedBytes).sorted(by: >) }
  /// The listener's port once running.
  public var port: UInt16? { listener?.port }
  /// The instance name the daemon registered, once advertised.
  public var advertisedName: String? { advertiser?.name }
  /// What we know of a peer.
  public func peer(_ id: PeerID) -> Peer? { inspect { $0.peer(id) } }

  /// Changes the accept policy (for example after a SIGHUP reload of an allow-list).
  public func setAcceptPolicy(_ policy: AcceptPolicy, allowList: Set<PeerID>) {
    machine.setAcceptPolicy(policy, allowList: allowList)
  }

  /// Publishes new discovery info.
  /// - Throws: ``DiscoveryInfoError`` when the TXT record would be too large.
  public func updateDiscoveryInfo(_ info: DiscoveryInfo) throws {
    try advertiser?.update(info: info)
  }
}

/// A session used the wrong way (a programming error in the caller).
public struct SessionUsageError: Error, CustomStringConvertible {
  public let description: String
  init(_ description: String) { self.description = description }
}
