import NearbyCore
import NearbyDiscovery
import NearbySystem
import NearbyTransport
import Synchronization

/// A Nearby session: advertises us, browses for peers, answers and sends invitations, and
/// carries messages — the async, Linux-first counterpart of MultipeerConnectivity's
/// advertiser, browser and `MCSession` in one actor.
///
/// The actor alone owns peers, invitations, connections and routes (through
/// ``SessionStateMachine``, which holds the logic); every change comes out on ``events``.
/// ``run()`` is the session's task tree: call it once, in a task of its own; it returns after
/// ``shutdown()`` (or cancellation) has said goodbye to every peer, withdrawn the
/// advertisement and closed every socket and thread it made.
///
/// The actor runs on its own I/O thread (its ``EventLoop`` is its executor): frames go from
/// the socket through the decoder and the state machine without changing threads, and the
/// frames it sends are written once per loop iteration. ``send(_:to:)`` is `nonisolated`:
/// it only queues the message, so a sender never waits for the I/O thread.
public actor NearbySession {
  public nonisolated let configuration: SessionConfiguration
  /// Everything that happens, in order. One consumer.
  public nonisolated let events: AsyncStream<SessionEvent>
  private nonisolated let eventContinuation: AsyncStream<SessionEvent>.Continuation
  /// The session's I/O thread, which is also the actor's executor.
  public nonisolated let loop: EventLoop

  public nonisolated var unownedExecutor: UnownedSerialExecutor { loop.asUnownedSerialExecutor() }

  private var machine: SessionStateMachine
  private let start = ContinuousClock.now
  private var listener: TCPListener?
  private var advertiser: Advertiser?
  private var browser: Browser?
  private var connections: [ConnectionID: TCPConnection] = [:]
  private var connectors: [ConnectionID: TCPConnector] = [:]
  private var shutdownRequested = false
  private nonisolated let outbox = Mutex(Outbox())
  /// Boxed: a bare closure in a `Mutex` is re-wrapped in a reabstraction thunk at every
  /// `inout` access, and the chain grows until the stack overflows.
  private nonisolated let eventHandler = Mutex<EventHandlerBox?>(nil)
  /// Direct sessions, for ``send(_:to:)`` to write without waiting for the I/O thread.
  private nonisolated let fastRoutes = Mutex(FastRoutes())
  private nonisolated let messageIDs = Atomic<UInt64>(UInt64.random(in: 1...(1 << 31)))
  private var shutdownWaiters: [CheckedContinuation<Void, Never>] = []
  private var readyWaiters: [CheckedContinuation<UInt16?, Never>] = []
  /// Connections whose queue is full while a waiting message is queued for them.
  private var waitingForSpace: Set<ConnectionID> = []
  /// Messages taken from the outbox and not yet handed to the state machine (their
  /// connection was full), consumed from `backlogStart` on without moving the rest.
  private var backlog: [OutboxEntry] = []
  private var backlogStart = 0
  private var state = RunState.idle
  private let inboundIDs = Atomic<UInt64>(1)

  private enum RunState { case idle, running, stopped }

  /// - Throws: ``SystemError`` when the I/O thread cannot be created (no descriptors left).
  public init(configuration: SessionConfiguration) throws {
    self.configuration = configuration
    loop = try EventLoop(name: "nearby-io", busyPoll: configuration.busyPoll)
    var core = SessionStateMachine.Configuration(local: configuration.peer)
    core.capabilities = configuration.isRelay ? .relay : []
    core.acceptPolicy = configuration.acceptPolicy
    core.allowList = configuration.allowList
    core.timeouts = configuration.timeouts
    core.invitationTimeout = configuration.invitationTimeout
    core.maximumPeers = configuration.maximumPeers
    core.maximumPendingConnections = configuration.maximumPendingConnections
    core.maximumPendingInvitations = configuration.maximumPendingInvitations
    core.connectFound = configuration.connectFound
    machine = SessionStateMachine(configuration: core)
    (events, eventContinuation) = AsyncStream.makeStream(of: SessionEvent.self)
  }

  // MARK: Running

  /// Runs the session until ``shutdown()`` or cancellation.
  /// - Throws: ``SystemError`` when the listener or the I/O thread cannot start.
  public func run() async throws {
    guard state == .idle else { throw SessionUsageError("run() was already called on this session") }
    state = .running
    let loop = self.loop
    // Transport events arrive on the loop thread, which is this actor's executor.
    let sink: TransportSink = { event in self.assumeIsolated { $0.handle(event) } }
    transportSink = sink
    do {
      listener = try await TCPListener.bind(
        host: configuration.listenHost, port: configuration.listenPort, loop: loop, maximumQueuedBytes: configuration.maximumQueuedBytes,
        nextID: { [self] in ConnectionID(self.inboundIDsNext()) }, sink: sink)
    } catch {
      transportSink = nil
      await loop.shutdown()
      finishReady(nil)
      state = .stopped
      eventContinuation.finish()
      throw error
    }
    let port = listener!.port
    emit(.status(.listening(port: port)))
    finishReady(port)

    if configuration.advertise {
      let advertisement = PeerAdvertisement(peer: configuration.peer, isRelay: configuration.isRelay, info: configuration.discoveryInfo)
      advertiser = try Advertiser(advertisement: advertisement, serviceType: configuration.serviceType, port: port, loop: loop)
    }
    if configuration.browse {
      browser = Browser(
        serviceType: configuration.serviceType, localPeer: configuration.peer.id, includeOwnPeer: configuration.includeOwnAdvertisement, loop: loop)
    }
    let advertiser = self.advertiser
    let browser = self.browser

    await withTaskGroup(of: Void.self) { group in
      if let advertiser {
        group.addTask {
          for await event in advertiser.events { await self.handle(event) }
        }
        advertiser.start()
      }
      if let browser {
        group.addTask {
          for await event in browser.events { await self.handle(event) }
        }
        browser.start()
      }
      group.addTask {
        while !Task.isCancelled {
          let pause = await self.tick()
          try? await Task.sleep(for: pause)
        }
      }
      let gate = self.shutdownGate
      await withTaskCancellationHandler {
        await gate.wait()
      } onCancel: {
        gate.open()
      }
      await self.performShutdown()
      group.cancelAll()
    }
    transportSink = nil
    await loop.shutdown()
    state = .stopped
    eventContinuation.finish()
  }

  private nonisolated func inboundIDsNext() -> UInt64 {
    inboundIDs.add(1, ordering: .relaxed).oldValue
  }

  /// Waits until the listener is up. - Returns: its port, or `nil` if the session failed to start.
  public func waitUntilListening() async -> UInt16? {
    if let listener { return listener.port }
    if state == .stopped { return nil }
    return await withCheckedContinuation { readyWaiters.append($0) }
  }

  private func finishReady(_ port: UInt16?) {
    for waiter in readyWaiters { waiter.resume(returning: port) }
    readyWaiters = []
  }

  /// Leaves every peer (GOODBYE), declines pending invitations, withdraws the advertisement
  /// and closes everything; ``run()`` then returns. Idempotent.
  public func shutdown() async {
    requestShutdown()
    guard state == .running else { return }
    await withCheckedContinuation { continuation in
      if state != .running {
        continuation.resume()
      } else {
        shutdownWaiters.append(continuation)
      }
    }
  }

  private func requestShutdown() {
    guard !shutdownRequested else { return }
    shutdownRequested = true
    shutdownGate.open()
  }

  private nonisolated let shutdownGate = Gate()

  private func performShutdown() async {
    shutdownRequested = true
    fastRoutes.withLock { $0 = FastRoutes() }
    // Messages queued before the shutdown go out before the GOODBYEs.
    drainOutbox()
    advertiser?.finish()
    browser?.finish()
    listener?.close()
    var actions: [SessionAction] = []
    machine.shutdown(now: now, into: &actions)
    perform(actions)
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
    failOutbox()
    let waiters = shutdownWaiters
    shutdownWaiters = []
    state = .stopped
    for waiter in waiters { waiter.resume() }
  }

  var now: Duration { ContinuousClock.now - start }

  // MARK: Public operations

  /// Invites a discovered (or connected-through-HELLO) peer.
  /// - Parameters:
  ///   - context: shown to the invitee (at most 65 535 bytes).
  ///   - timeout: how long the invitee has to answer (default 30 s).
  public func invite(_ peer: PeerID, context: [UInt8] = [], timeout: Duration? = nil) {
    var actions: [SessionAction] = []
    machine.invite(peer, context: context, timeout: timeout, now: now, into: &actions)
    perform(actions)
  }

  /// Invites whoever listens at `endpoints` (no DNS-SD needed).
  public func invite(endpoints: [Endpoint], context: [UInt8] = [], timeout: Duration? = nil) {
    var actions: [SessionAction] = []
    machine.invite(endpoints: endpoints, context: context, timeout: timeout, into: &actions)
    perform(actions)
  }

  /// Accepts the oldest pending invitation from `peer`.
  public func accept(_ peer: PeerID) {
    var actions: [SessionAction] = []
    machine.accept(peer: peer, now: now, into: &actions)
    perform(actions)
  }

  /// Declines the oldest pending invitation from `peer`.
  public func decline(_ peer: PeerID) {
    var actions: [SessionAction] = []
    machine.decline(peer: peer, now: now, into: &actions)
    perform(actions)
  }

  /// Ends the session with one peer.
  public func leave(_ peer: PeerID) {
    var actions: [SessionAction] = []
    machine.leave(peer, now: now, into: &actions)
    perform(actions)
  }

  /// Sends a message: reliable and in order per peer. Each peer that gets it answers with a
  /// ``SessionEvent/delivered(messageID:to:)``; a peer it cannot reach gives an
  /// ``SessionError/undelivered(messageID:peer:peerID:reason:)`` event naming the message.
  ///
  /// It only queues the message for the session's I/O thread, so it returns at once from any
  /// thread; messages queued by one caller keep their order. When more than
  /// ``SessionConfiguration/maximumQueuedBytes`` wait (the peers read too slowly), the
  /// message is refused: an `undelivered` (`queueFull`) event names it.
  /// - Returns: the message id.
  @discardableResult
  public nonisolated func send(_ body: [UInt8], to recipients: Recipients = .all) -> UInt64 {
    enqueue(body, to: recipients, waiting: false)
  }

  /// Like ``send(_:to:)``, but waits while messages already queued (for the session, or on
  /// a recipient's connection) fill the queue, so a fast sender slows down to the pace of
  /// its slowest peer instead of getting `queueFull` errors.
  @discardableResult
  public nonisolated func sendWhenWritable(_ body: [UInt8], to recipients: Recipients = .all) async -> UInt64 {
    while true {
      let full = outbox.withLock { $0.bytes >= configuration.maximumQueuedBytes && !$0.closed }
      guard full else { break }
      await withCheckedContinuation { continuation in
        let resumeNow = outbox.withLock { box -> Bool in
          if box.bytes < configuration.maximumQueuedBytes || box.closed { return true }
          box.spaceWaiters.append(continuation)
          return false
        }
        if resumeNow { continuation.resume() }
      }
    }
    return enqueue(body, to: recipients, waiting: true)
  }

  /// Like ``send(_:to:)``, and also says which peers the message was queued for (each of
  /// them answers with `delivered` or an `undelivered` error).
  public func sendTracked(_ body: [UInt8], to recipients: Recipients = .all) -> (id: UInt64, recipients: [Peer]) {
    drainOutbox()
    var actions: [SessionAction] = []
    let id = messageIDs.add(1, ordering: .relaxed).oldValue
    let (_, targets) = machine.sendMessage(body, to: recipients, id: id, timestamp: Self.unixMilliseconds(), now: now, into: &actions)
    let peers = targets.compactMap { machine.peer($0) }
    perform(actions)
    return (id, peers)
  }

  private nonisolated func enqueue(_ body: [UInt8], to recipients: Recipients, waiting: Bool) -> UInt64 {
    let id = messageIDs.add(1, ordering: .relaxed).oldValue
    if sendDirectly(id, body, to: recipients, waiting: waiting) { return id }
    let entry = OutboxEntry(id: id, body: body, recipients: recipients, timestamp: Self.unixMilliseconds(), waiting: waiting)
    let (accepted, schedule) = outbox.withLock { box -> (Bool, Bool) in
      if box.closed { return (false, false) }
      if !waiting, box.bytes >= configuration.maximumQueuedBytes * 2 { return (false, false) }
      box.entries.append(entry)
      box.bytes += body.count
      defer { box.drainScheduled = true }
      return (true, !box.drainScheduled)
    }
    guard accepted else {
      let reason: UndeliveredReason = outbox.withLock { $0.closed } ? .shuttingDown : .queueFull
      let peerID: PeerID
      if case .peers(let ids) = recipients, let first = ids.first { peerID = first } else { peerID = configuration.peer.id }
      publish(.error(.undelivered(messageID: id, peer: nil, peerID: peerID, reason: reason)))
      return id
    }
    if schedule {
      loop.execute { self.assumeIsolated { $0.drainOutbox() } }
    }
    return id
  }

  /// The fast path of ``send(_:to:)``: when nothing is queued before it and every recipient
  /// is a direct session (no relay involved), the message is encoded and written from the
  /// calling thread (an idle connection is written to at once), and the state machine only
  /// records it later, before it handles anything from those connections.
  /// - Returns: `false` when the message must take the queued path.
  private nonisolated func sendDirectly(_ id: UInt64, _ body: [UInt8], to recipients: Recipients, waiting: Bool) -> Bool {
    guard body.count <= ProtocolLimits.maximumBodyLength else { return false }
    let refused = outbox.withLock { box -> [SessionEvent]? in
      // Not while earlier messages are on their way from the queue to the connections.
      guard box.entries.isEmpty, !box.draining, !box.closed else { return nil }
      let routes = fastRoutes.withLock { $0 }
      guard let route = directRoute(recipients, in: routes) else { return nil }
      if waiting, route.targets.contains(where: { $0.1.queuedBytes >= configuration.maximumQueuedBytes }) { return nil }
      let (sent, refused) = writeDirectly(id, body, timestamp: Self.unixMilliseconds(), route: route)
      box.sentDirectly.append(SentDirectly(id: id, connections: sent))
      return refused
    }
    guard let refused else { return false }
    // Outside the lock: an event handler may well send again.
    for event in refused { publish(event) }
    return true
  }

  /// The direct sessions a message to `recipients` goes to, when no relay is involved.
  private nonisolated func directRoute(_ recipients: Recipients, in routes: FastRoutes) -> DirectRoute? {
    guard routes.usable else { return nil }
    switch recipients {
    case .all:
      return routes.everyone.isEmpty ? nil : DirectRoute(targets: routes.everyone, addressed: [])
    case .peers(let ids):
      guard ids.count == 1, let connection = routes.direct[ids[0]] else { return nil }
      return DirectRoute(targets: [(ids[0], connection)], addressed: ids)
    }
  }

  /// Encodes a message onto its direct sessions' connections.
  /// - Returns: the connections it was queued on, and an `undelivered` error for each that
  ///   refused it (for the caller to publish).
  private nonisolated func writeDirectly(_ id: UInt64, _ body: [UInt8], timestamp: UInt64, route: DirectRoute) -> (
    sent: [ConnectionID], refused: [SessionEvent]
  ) {
    let message = Frame.Message(id: id, sender: configuration.peer.id, timestamp: timestamp, recipients: route.addressed, body: body)
    var sent: [ConnectionID] = []
    var refused: [SessionEvent] = []
    for (peerID, connection) in route.targets {
      switch connection.send(message: message) {
      case .queued: sent.append(connection.id)
      case .full: refused.append(.error(.undelivered(messageID: id, peer: nil, peerID: peerID, reason: .queueFull)))
      case .closed: refused.append(.error(.undelivered(messageID: id, peer: nil, peerID: peerID, reason: .connectionClosed(.closedWhileClosing))))
      }
    }
    return (sent, refused)
  }

  /// Records the messages ``sendDirectly`` wrote (before anything from the wire is handled).
  private func recordSentDirectly() {
    let records = outbox.withLock { box -> [SentDirectly] in
      defer { box.sentDirectly.removeAll(keepingCapacity: true) }
      return box.sentDirectly
    }
    guard !records.isEmpty else { return }
    let time = now
    for record in records { machine.recordSent(record.id, on: record.connections, now: time) }
  }

  /// Publishes the direct sessions for ``sendDirectly`` (after sessions come and go).
  private func updateFastRoutes() {
    var routes = FastRoutes()
    routes.usable = !machine.hasRelayRoutes
    for peer in machine.connectedPeers {
      guard let id = machine.sessionConnection(peer.id), let connection = connections[id] else { continue }
      routes.direct[peer.id] = connection
      routes.everyone.append((peer.id, connection))
    }
    fastRoutes.withLock { $0 = routes }
  }

  /// Hands queued messages to the state machine, in order. A waiting message whose
  /// connection is full stays queued (with the ones after it) until the connection drains.
  private func drainOutbox() {
    recordSentDirectly()
    let fresh = outbox.withLock { box -> [OutboxEntry] in
      box.drainScheduled = false
      if !box.entries.isEmpty { box.draining = true }
      defer { box.entries.removeAll(keepingCapacity: true) }
      return box.entries
    }
    if !fresh.isEmpty {
      if backlogStart > 0, backlogStart * 2 >= backlog.count {
        backlog.removeFirst(backlogStart)
        backlogStart = 0
      }
      backlog.append(contentsOf: fresh)
    }
    guard backlogStart < backlog.count else { return }
    var actions: [SessionAction] = []
    var sentBytes = 0
    let time = now
    let routes = fastRoutes.withLock { $0 }
    while backlogStart < backlog.count {
      let entry = backlog[backlogStart]
      // To direct sessions only: written here, recorded with the state machine afterwards
      // (the same as `send` does from other threads), without routing it again.
      if entry.body.count <= ProtocolLimits.maximumBodyLength, let route = directRoute(entry.recipients, in: routes) {
        if entry.waiting, let full = route.targets.first(where: { $0.1.queuedBytes >= configuration.maximumQueuedBytes })?.1,
          full.notifyWhenWritable()
        {
          waitingForSpace.insert(full.id)
          break
        }
        let (sent, refused) = writeDirectly(entry.id, entry.body, timestamp: entry.timestamp, route: route)
        machine.recordSent(entry.id, on: sent, now: time)
        for event in refused { publish(event) }
        sentBytes += entry.body.count
        backlogStart += 1
        continue
      }
      if entry.waiting,
        let full = machine.connections(for: entry.recipients).first(where: { (connections[$0]?.queuedBytes ?? 0) >= configuration.maximumQueuedBytes }
        ),
        connections[full]?.notifyWhenWritable() == true
      {
        // The rest waits (in order, before what arrives meanwhile) until `full` drains.
        waitingForSpace.insert(full)
        break
      }
      _ = machine.sendMessage(entry.body, to: entry.recipients, id: entry.id, timestamp: entry.timestamp, now: time, into: &actions)
      sentBytes += entry.body.count
      backlogStart += 1
      // Queued at once, so the next entry's check sees the connection's real fill level.
      perform(actions)
      actions.removeAll(keepingCapacity: true)
    }
    let drained = backlogStart == backlog.count
    if drained {
      backlog.removeAll(keepingCapacity: backlog.capacity <= 4096)
      backlogStart = 0
    }
    let waiters = outbox.withLock { box -> [CheckedContinuation<Void, Never>] in
      // The direct path of `send` stays closed while older messages wait here.
      box.draining = !drained
      box.bytes -= sentBytes
      guard box.bytes < configuration.maximumQueuedBytes / 2 || box.bytes == 0 else { return [] }
      defer { box.spaceWaiters.removeAll() }
      return box.spaceWaiters
    }
    for waiter in waiters { waiter.resume() }
  }

  /// At shutdown: messages still queued are reported undelivered; waiting senders resume.
  private func failOutbox() {
    let (entries, waiters) = outbox.withLock { box -> ([OutboxEntry], [CheckedContinuation<Void, Never>]) in
      box.closed = true
      defer {
        box.entries.removeAll()
        box.spaceWaiters.removeAll()
        box.bytes = 0
      }
      return (box.entries, box.spaceWaiters)
    }
    let unsent = Array(backlog[backlogStart...]) + entries
    backlog = []
    backlogStart = 0
    for entry in unsent {
      let peerID: PeerID
      if case .peers(let ids) = entry.recipients, let first = ids.first { peerID = first } else { peerID = configuration.peer.id }
      emit(.error(.undelivered(messageID: entry.id, peer: machine.peer(peerID), peerID: peerID, reason: .shuttingDown)))
    }
    for waiter in waiters { waiter.resume() }
  }

  /// Connected peers, by name.
  public var connectedPeers: [Peer] { machine.connectedPeers }
  /// Peers reached through a relay, by name, with the relay.
  public var relayedPeers: [(peer: Peer, via: Peer)] { machine.relayedPeers }
  /// What this session forwarded and dropped as a relay.
  public var relayStatistics: RelayStatistics { machine.relayStatistics }
  /// Bytes waiting in each connection's send queue (largest first).
  public var queueDepths: [Int] { connections.values.map(\.queuedBytes).sorted(by: >) }
  /// Peers seen through DNS-SD, by name.
  public var discoveredPeers: [DiscoveredPeer] { machine.discoveredPeers }
  /// Invitations waiting for an answer, oldest first.
  public var pendingInvitations: [IncomingInvitation] { machine.pendingInvitations }
  /// The listener's port once running.
  public var port: UInt16? { listener?.port }
  /// The instance name the daemon registered, once advertised.
  public var advertisedName: String? { advertiser?.name }
  /// What we know of a peer.
  public func peer(_ id: PeerID) -> Peer? { machine.peer(id) }

  /// Changes the accept policy (for example after a SIGHUP reload of an allow-list).
  public func setAcceptPolicy(_ policy: AcceptPolicy, allowList: Set<PeerID>) {
    machine.setAcceptPolicy(policy, allowList: allowList)
  }

  /// Publishes new discovery info.
  public func updateDiscoveryInfo(_ info: DiscoveryInfo) throws {
    try advertiser?.update(info: info)
  }

  static func unixMilliseconds() -> UInt64 {
    var spec = timespec()
    clock_gettime(CLOCK_REALTIME, &spec)
    return UInt64(spec.tv_sec) * 1000 + UInt64(spec.tv_nsec) / 1_000_000
  }

  // MARK: Inputs

  private func handle(_ event: TransportEvent) {
    var actions: [SessionAction] = []
    switch event {
    case .accepted(let connection):
      if shutdownRequested {
        connection.close(.now)
        return
      }
      connections[connection.id] = connection
      machine.connectionAccepted(connection.id, now: now, into: &actions)
    case .connected(let connection):
      connectors[connection.id] = nil
      guard machine.connectionState(connection.id) == nil, machine.connectionIDs.contains(connection.id), !shutdownRequested else {
        connection.close(.now)
        return
      }
      connections[connection.id] = connection
      machine.connectionEstablished(connection.id, now: now, into: &actions)
    case .connectFailed(let id, let detail):
      connectors[id] = nil
      machine.connectFailed(id, detail: detail, now: now, into: &actions)
    case .frames(let id, let frames):
      recordSentDirectly()
      machine.received(frames, on: id, now: now, into: &actions)
      connections[id]?.batchConsumed()
    case .decodingFailed(let id, let error):
      let peer = machine.connectionPeer(id)
      emit(.status(.connectionRejected(peer: peer, reason: "\(error)")))
      machine.receiveFailed(error, on: id, now: now, into: &actions)
    case .closed(let id, let detail):
      recordSentDirectly()
      connections[id] = nil
      machine.connectionClosed(id, detail: detail, now: now, into: &actions)
    case .writable(let id):
      if waitingForSpace.remove(id) != nil { drainOutbox() }
    }
    perform(actions)
  }

  private func handle(_ event: AdvertiserEvent) {
    switch event {
    case .registered(let name): emit(.status(.advertised(name: name)))
    case .failed(let error): emit(.status(.advertisingFailed(error.description)))
    case .infoUpdated: break
    }
  }

  private func handle(_ event: BrowserEvent) {
    var actions: [SessionAction] = []
    switch event {
    case .found(let peer), .updated(let peer): machine.discovered(peer, into: &actions)
    case .lost(let peer): machine.lost(peer.id, into: &actions)
    case .notANearbyPeer(let instance, let reason): emit(.status(.foreignService(instance: instance, reason: reason)))
    case .failed(let error): emit(.status(.browsingFailed(error.description)))
    }
    perform(actions)
  }

  /// Runs the timers. - Returns: how long to sleep before the next tick.
  private func tick() -> Duration {
    recordSentDirectly()
    var actions: [SessionAction] = []
    let current = now
    machine.tick(now: current, into: &actions)
    perform(actions)
    guard let next = machine.nextDeadline else { return .milliseconds(250) }
    return min(max(next - current, .milliseconds(5)), .milliseconds(250))
  }

  // MARK: Performing actions

  private func perform(_ actions: [SessionAction]) {
    for action in actions {
      switch action {
      case .connect(let id, let endpoints):
        guard !shutdownRequested, let sink = transportSink else {
          var more: [SessionAction] = []
          machine.connectFailed(id, detail: "the session is shutting down", now: now, into: &more)
          perform(more)
          continue
        }
        connectors[id] = TCPConnector.connect(
          id, to: endpoints, loop: loop, timeout: configuration.timeouts.connect, maximumQueuedBytes: configuration.maximumQueuedBytes, sink: sink)
      case .send(let id, let frame):
        // Control frames are small and bounded by the protocol; they are never refused.
        _ = connections[id]?.enqueue(force: true) { FrameEncoder.encode(frame, into: &$0) }
      case .sendMessage(let message, let ids):
        sendMessage(message, on: ids)
      case .close(let id, let mode):
        if let connector = connectors.removeValue(forKey: id) { connector.cancel() }
        if let connection = connections[id] {
          connection.close(mode)
          if mode == .now { connections[id] = nil }
        }
      case .emit(let event):
        emit(event)
      }
    }
  }

  private var transportSink: TransportSink?

  private func sendMessage(_ message: Frame.Message, on ids: [ConnectionID]) {
    var failures: [SessionAction] = []
    if ids.count == 1 {
      let result = connections[ids[0]]?.send(message: message) ?? .closed
      if result != .queued { noteFailure(message, ids[0], result, into: &failures) }
    } else {
      var bytes: [UInt8] = []
      FrameEncoder.encodeMessage(message, into: &bytes)
      for id in ids {
        let result = connections[id]?.send(encoded: bytes) ?? .closed
        if result != .queued { noteFailure(message, id, result, into: &failures) }
      }
    }
    if !failures.isEmpty { perform(failures) }
  }

  private func noteFailure(_ message: Frame.Message, _ id: ConnectionID, _ result: TCPConnection.QueueResult, into actions: inout [SessionAction]) {
    guard message.sender == configuration.peer.id else {
      // A relay forwarding someone else's message: the origin is told.
      machine.forwardFailed(message, on: id, into: &actions)
      return
    }
    let reason: UndeliveredReason = result == .full ? .queueFull : .connectionClosed(.closedWhileClosing)
    machine.sendFailed(messageID: message.id, on: id, reason: reason, into: &actions)
  }

  private func emit(_ event: SessionEvent) {
    switch event {
    case .connected, .disconnected, .reachable, .unreachable: updateFastRoutes()
    default: break
    }
    publish(event)
  }

  /// Hands an event to the handler, or to ``events``.
  private nonisolated func publish(_ event: SessionEvent) {
    if let handler = eventHandler.withLock({ $0 }) {
      handler.call(event)
    } else {
      eventContinuation.yield(event)
    }
  }

  /// Delivers events to `handler`, called on the session's I/O thread as they happen,
  /// instead of to ``events``. For the lowest latency (no thread switch per event); the
  /// handler must be quick and must not block. One exception to the thread: a message that
  /// ``send(_:to:)`` refuses at once (queue full, session closed) is reported on the thread
  /// that called `send`. `nil` goes back to ``events``.
  public nonisolated func setEventHandler(_ handler: (@Sendable (SessionEvent) -> Void)?) {
    let box = handler.map(EventHandlerBox.init)
    eventHandler.withLock { $0 = box }
  }
}

/// Messages queued by ``NearbySession/send(_:to:)`` for the I/O thread.
struct Outbox: Sendable {
  var entries: [OutboxEntry] = []
  var bytes = 0
  var drainScheduled = false
  /// Entries taken out by ``NearbySession/drainOutbox`` and not yet queued on connections.
  var draining = false
  var closed = false
  var spaceWaiters: [CheckedContinuation<Void, Never>] = []
  var sentDirectly: [SentDirectly] = []
}

final class EventHandlerBox: Sendable {
  let call: @Sendable (SessionEvent) -> Void
  init(_ call: @escaping @Sendable (SessionEvent) -> Void) { self.call = call }
}

/// A message written by the fast path, for the state machine to record.
struct SentDirectly: Sendable {
  let id: UInt64
  let connections: [ConnectionID]
}

/// Where a message goes when only direct sessions are involved.
struct DirectRoute {
  let targets: [(PeerID, TCPConnection)]
  let addressed: [PeerID]
}

/// Direct sessions, readable from any thread (see ``NearbySession/sendDirectly``).
struct FastRoutes: Sendable {
  var direct: [PeerID: TCPConnection] = [:]
  var everyone: [(PeerID, TCPConnection)] = []
  /// False while any peer is reached through a relay: then every message takes the queue.
  var usable = false
}

struct OutboxEntry: Sendable {
  let id: UInt64
  let body: [UInt8]
  let recipients: Recipients
  let timestamp: UInt64
  let waiting: Bool
}

/// A one-shot signal that can be opened from any context (a cancellation handler too) and
/// awaited once; the continuation is resumed exactly once.
final class Gate: Sendable {
  private let state = Mutex<(open: Bool, waiter: CheckedContinuation<Void, Never>?)>((false, nil))

  func open() {
    let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
      state.open = true
      defer { state.waiter = nil }
      return state.waiter
    }
    waiter?.resume()
  }

  func wait() async {
    await withCheckedContinuation { continuation in
      let resumeNow = state.withLock { state -> Bool in
        if state.open { return true }
        state.waiter = continuation
        return false
      }
      if resumeNow { continuation.resume() }
    }
  }
}

/// A session used the wrong way (a programming error in the caller).
public struct SessionUsageError: Error, CustomStringConvertible {
  public let description: String
  init(_ description: String) { self.description = description }
}

#if canImport(Glibc)
  import Glibc
#endif
