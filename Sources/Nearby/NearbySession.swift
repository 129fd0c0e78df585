import NearbyCore
import NearbyDiscovery
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
public actor NearbySession {
  public nonisolated let configuration: SessionConfiguration
  /// Everything that happens, in order. One consumer.
  public nonisolated let events: AsyncStream<SessionEvent>
  private let eventContinuation: AsyncStream<SessionEvent>.Continuation

  private var machine: SessionStateMachine
  private let start = ContinuousClock.now
  private var loop: EventLoop?
  private var listener: TCPListener?
  private var advertiser: Advertiser?
  private var browser: Browser?
  private var connections: [ConnectionID: TCPConnection] = [:]
  private var connectors: [ConnectionID: TCPConnector] = [:]
  private var transportContinuation: AsyncStream<TransportEvent>.Continuation?
  private var shutdownRequested = false
  private var shutdownWaiters: [CheckedContinuation<Void, Never>] = []
  private var readyWaiters: [CheckedContinuation<UInt16?, Never>] = []
  private var spaceWaiters: [ConnectionID: [CheckedContinuation<Void, Never>]] = [:]
  private var state = RunState.idle
  private let inboundIDs = Atomic<UInt64>(1)

  private enum RunState { case idle, running, stopped }

  public init(configuration: SessionConfiguration) {
    self.configuration = configuration
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
    let loop: EventLoop
    do {
      loop = try EventLoop()
    } catch {
      finishReady(nil)
      state = .stopped
      eventContinuation.finish()
      throw error
    }
    self.loop = loop
    let (transport, transportContinuation) = AsyncStream.makeStream(of: TransportEvent.self)
    self.transportContinuation = transportContinuation
    let sink: TransportSink = { transportContinuation.yield($0) }
    do {
      listener = try await TCPListener.bind(
        host: configuration.listenHost, port: configuration.listenPort, loop: loop, maximumQueuedBytes: configuration.maximumQueuedBytes,
        nextID: { [self] in ConnectionID(self.inboundIDsNext()) }, sink: sink)
    } catch {
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
      group.addTask {
        for await event in transport { await self.handle(event) }
      }
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
    await loop.shutdown()
    self.loop = nil
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
    transportContinuation?.finish()
    for (_, waiters) in spaceWaiters { for waiter in waiters { waiter.resume() } }
    spaceWaiters.removeAll()
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
  /// - Returns: the message id.
  @discardableResult
  public func send(_ body: [UInt8], to recipients: Recipients = .all) -> UInt64 {
    var actions: [SessionAction] = []
    let id = machine.send(body, to: recipients, timestamp: Self.unixMilliseconds(), now: now, into: &actions)
    perform(actions)
    return id
  }

  /// Like ``send(_:to:)``, and also says which peers the message was queued for (each of
  /// them answers with `delivered` or an `undelivered` error).
  public func sendTracked(_ body: [UInt8], to recipients: Recipients = .all) -> (id: UInt64, recipients: [Peer]) {
    var actions: [SessionAction] = []
    let (id, targets) = machine.sendMessage(body, to: recipients, timestamp: Self.unixMilliseconds(), now: now, into: &actions)
    let peers = targets.compactMap { machine.peer($0) }
    perform(actions)
    return (id, peers)
  }

  /// Like ``send(_:to:)``, but first waits while a recipient's send queue is full, so a fast
  /// sender slows down to the pace of its slowest peer instead of getting `queueFull` errors.
  @discardableResult
  public func sendWhenWritable(_ body: [UInt8], to recipients: Recipients = .all) async -> UInt64 {
    while !shutdownRequested {
      let targets: [ConnectionID]
      switch recipients {
      case .all: targets = machine.connectedPeers.compactMap { machine.sessionConnection($0.id) }
      case .peers(let ids): targets = ids.compactMap { machine.sessionConnection($0) }
      }
      guard let full = targets.first(where: { (connections[$0]?.queuedBytes ?? 0) >= configuration.maximumQueuedBytes }) else { break }
      await withCheckedContinuation { spaceWaiters[full, default: []].append($0) }
    }
    return send(body, to: recipients)
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
      machine.received(frames, on: id, now: now, into: &actions)
      connections[id]?.batchConsumed()
    case .decodingFailed(let id, let error):
      let peer = machine.connectionPeer(id)
      emit(.status(.connectionRejected(peer: peer, reason: "\(error)")))
      machine.receiveFailed(error, on: id, now: now, into: &actions)
    case .closed(let id, let detail):
      connections[id] = nil
      machine.connectionClosed(id, detail: detail, now: now, into: &actions)
    case .writable(let id):
      if let waiters = spaceWaiters.removeValue(forKey: id) {
        for waiter in waiters { waiter.resume() }
      }
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
        guard let loop, !shutdownRequested, let sink = transportSink else {
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

  private var transportSink: TransportSink? {
    guard let continuation = transportContinuation else { return nil }
    return { continuation.yield($0) }
  }

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
    eventContinuation.yield(event)
  }
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
