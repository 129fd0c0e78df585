import NearbyCore
import NearbyDiscovery
import NearbyTransport

/// What arrives from the transport, DNS-SD and the clock, and how the state machine's
/// actions are carried out. Everything here runs on the session's I/O thread.
extension NearbySession {
  func handle(_ event: TransportEvent) {
    var actions = takeActions()
    defer { recycle(&actions) }
    switch event {
    case .accepted(let connection):
      if shutdownRequested {
        connection.close(.now)
        return
      }
      connections[connection.id] = connection
      machine.connectionAccepted(connection.id, source: connection.remote.sourceKey, now: now, into: &actions)
    case .connected(let connection):
      connectors[connection.id] = nil
      guard machine.connectionState(connection.id) == nil, machine.connectionIDs.contains(connection.id), !shutdownRequested else {
        connection.close(.now)
        return
      }
      connections[connection.id] = connection
      machine.connectionEstablished(connection.id, remote: connection.remote.endpoint, now: now, into: &actions)
    case .connectFailed(let id, let detail):
      connectors[id] = nil
      machine.connectFailed(id, detail: detail, now: now, into: &actions)
    case .authenticated(let id, let peer):
      machine.authenticated(id, peer, now: now, into: &actions)
    case .securityFailed(let id, let failure):
      machine.securityFailed(id, detail: failure.description, answer: failure.answer, now: now, into: &actions)
    case .frames(let id, let frames):
      machine.received(frames, on: id, now: now, into: &actions)
    case .decodingFailed(let id, let error):
      emit(.status(.connectionRejected(peer: machine.connectionPeer(id), reason: "\(error)")))
      machine.receiveFailed(error, on: id, now: now, into: &actions)
    case .closed(let id, let detail):
      connections[id] = nil
      untaken[id] = nil
      if !guards.heldBack.isEmpty { releaseHeldBack(of: id) }
      machine.connectionClosed(id, detail: detail, now: now, into: &actions)
      connectionReady(id)
    case .writable(let id):
      connectionReady(id)
      transferConnectionReady(id)
    case .resourceExhausted(let id, let detail):
      receiveBudgetExhausted(id, detail, into: &actions)
    }
    perform(taking: &actions)
  }

  func handle(_ event: AdvertiserEvent) {
    switch event {
    case .registered(let name): emit(.status(.advertised(name: name)))
    case .failed(let error): emit(.status(.advertisingFailed(error.description)))
    case .infoUpdated: break
    }
  }

  func handle(_ event: BrowserEvent) {
    var actions: [SessionAction] = []
    switch event {
    case .found(let peer), .updated(let peer): machine.discovered(peer, into: &actions)
    case .lost(let peer): machine.lost(peer.id, into: &actions)
    case .notANearbyPeer(let instance, let reason): emit(.status(.foreignService(instance: instance, reason: reason)))
    case .failed(let error): emit(.status(.browsingFailed(error.description)))
    case .crowded(let limit): emit(.status(.discoveryCrowded(limit: limit)))
    }
    perform(taking: &actions)
  }

  /// Runs `body` isolated to the session from code that runs on the session's loop (or the
  /// queue that replaces it after it stopped): what `assumeIsolated` does, with the loop's
  /// own check of the thread instead of the runtime's. That one asks the executor through
  /// the concurrency runtime, about 360 instructions, a dozen times per round trip of a
  /// message; this compares the thread's id. Off the loop it stops the program, as
  /// `assumeIsolated` does. Every entry of the loop's work into the session goes through it
  /// or, on the per-message paths, through ``handleOnLoop(_:)`` and its like.
  @inline(__always)
  nonisolated func whileOnLoop<T>(_ body: (isolated NearbySession) throws -> T) rethrows -> T {
    precondition(loop.isCurrent, "NearbySession: not on the session's event loop")
    typealias Isolated = (isolated NearbySession) throws -> T
    typealias Plain = (NearbySession) throws -> T
    return try withoutActuallyEscaping(body) { (body: @escaping Isolated) throws -> T in
      try unsafeBitCast(body, to: Plain.self)(self)
    }
  }

  // The per-message entries. A closure handed to `whileOnLoop` (or to `assumeIsolated`,
  // which is built the same way) costs two heap allocations per call: the context that
  // `withoutActuallyEscaping` must be able to count, and the box of what it captures;
  // a closure literal passed through an `@escaping` parameter still cost one. A closure
  // without captures in a local constant of an explicit type costs none (counted with
  // callgrind), so these three are written out. What they pass, they pass as arguments.

  /// ``handle(_:)-(TransportEvent)`` from the loop thread: the transport's sink.
  nonisolated func handleOnLoop(_ event: TransportEvent) {
    precondition(loop.isCurrent, "NearbySession: not on the session's event loop")
    let handle: (isolated NearbySession, TransportEvent) -> Void = { $0.handle($1) }
    unsafeBitCast(handle, to: ((NearbySession, TransportEvent) -> Void).self)(self, event)
  }

  /// ``attemptSend(_:to:)`` from the loop thread, without a hop (the loop is our executor).
  nonisolated func attemptSendOnLoop(_ body: [UInt8], to recipients: Recipients) -> SendAttempt {
    precondition(loop.isCurrent, "NearbySession: not on the session's event loop")
    let attempt: (isolated NearbySession, [UInt8], Recipients) -> SendAttempt = { $0.attemptSend($1, to: $2) }
    return unsafeBitCast(attempt, to: ((NearbySession, [UInt8], Recipients) -> SendAttempt).self)(self, body, recipients)
  }

  /// ``acknowledgeTaken()`` from the loop thread (or the queue that replaces it).
  nonisolated func acknowledgeTakenOnLoop() {
    precondition(loop.isCurrent, "NearbySession: not on the session's event loop")
    let acknowledge: (isolated NearbySession) -> Void = { $0.acknowledgeTaken() }
    unsafeBitCast(acknowledge, to: ((NearbySession) -> Void).self)(self)
  }

  // MARK: Time

  /// Runs the protocol's timers, then schedules itself for the next deadline (at most a
  /// quarter second away).
  func scheduleTick(after delay: Duration) {
    tickTimer = loop.schedule(after: delay) { [self] in
      whileOnLoop { session in
        session.tickTimer = nil
        guard !session.shutdownRequested else { return }
        var actions: [SessionAction] = []
        let current = session.now
        session.machine.tick(now: current, into: &actions)
        session.perform(taking: &actions)
        for connection in session.connections.values { connection.trimIfIdle() }
        let next = session.inspect({ $0.nextDeadline }).map { min(max($0 - current, .milliseconds(5)), .milliseconds(250)) }
        session.scheduleTick(after: next ?? .milliseconds(250))
      }
    }
  }

  // MARK: Performing actions

  /// Carries out the state machine's actions, moving each out of `actions` (left holding
  /// ``spentAction`` in its place): a received message goes on to the hub without a copy.
  /// Iterated in place, each action was copied out of the list and the list destroyed later,
  /// a retain and a release of every payload: callgrind of a pinned ping-pong counted about
  /// 2 500 instructions a round trip in those copies and destroys.
  func perform(taking actions: inout [SessionAction]) {
    // Received messages are counted per run of one connection's, not one by one.
    var counting: (connection: ConnectionID, messages: Int, bytes: Int)?
    // Received messages of this call, published or held back (not counted as untaken yet).
    var decidedInRun = 0
    for index in actions.indices {
      var action = Self.spentAction
      swap(&action, &actions[index])
      switch consume action {
      case .connect(let id, let endpoints):
        guard !shutdownRequested, let sink = transportSink else {
          var more: [SessionAction] = []
          machine.connectFailed(id, detail: "the session is shutting down", now: now, into: &more)
          perform(taking: &more)
          continue
        }
        connectors[id] = TCPConnector.connect(
          id, to: endpoints, loop: loop, timeout: configuration.timeouts.connect, maximumQueuedBytes: configuration.maximumQueuedBytes,
          limits: guards.limits, security: security, expecting: machine.expectedPeer(of: id), sink: sink)
      case .send(let id, let frame):
        guard let connection = connections[id] else { continue }
        if case .error = frame, !connection.isAuthenticated {
          // Refused before the handshake completed (busy, handshake timeout).
          connection.sendPlaintextError(frame)
          continue
        }
        // Control frames are small and bounded by the protocol; they are never refused.
        _ = connection.enqueue(force: true) { FrameEncoder.encode(frame, into: &$0) }
      case .sendMessage(let message, let ids):
        sendMessage(message, on: ids)
      case .resendMessages(let messages, let id):
        var failures: [SessionAction] = []
        for message in messages {
          let result = connections[id]?.sendAgain(message: message) ?? .closed
          if result != .queued { noteFailure(message, id, result, into: &failures) }
        }
        if !failures.isEmpty { perform(taking: &failures) }
      case .close(let id, let mode):
        if let connector = connectors.removeValue(forKey: id) { connector.cancel() }
        if let connection = connections[id] {
          connection.close(mode)
          if mode == .now {
            connections[id] = nil
            untaken[id] = nil
            if !guards.heldBack.isEmpty { releaseHeldBack(of: id) }
            // No `.closed` comes for a connection closed at once: senders waiting for its
            // room try again now (and are told the peer is gone, or wait for its resume).
            connectionReady(id)
          }
        }
      case .emit(.delivered(let id, let peer)) where !holdsMessages(from: peer.id):
        // Acknowledgements come by the hundred (one DELIVERED answers a batch): they reach
        // the hub in one publish with the messages around them. (``emit(_:)`` has nothing
        // else to do for them, but to put them behind their peer's messages held back.)
        // Matched here, not by an `if case` on the event: that copied every event once more.
        publishing.append(EventHub.Publication(element: .session(.delivered(messageID: id, to: peer))))
      case .emit(let event):
        emit(event)
      case .emitFresh(let event):
        emit(event, fresh: true)
      case .deliver(let message, let connection):
        let claim = MessageClaim(
          taken: TakenMessage(connection: connection, origin: message.from.id, id: message.id.rawValue), bytes: message.body.count)
        // Usually far fewer than a fair share wait in the hub, or there is one connection: no lookup.
        // (The publication is made where it goes: a local used in both branches was copied.)
        decidedInRun += 1
        if guards.heldBack.isEmpty && (guards.untakenMessages + decidedInRun <= Self.fairShare || connections.count < 2) {
          publishing.append(EventHub.Publication(element: .session(.message(message)), claim: claim))
        } else {
          let decided = (untaken[connection]?.messages ?? 0) + (counting?.connection == connection ? counting!.messages : 0)
          admit(EventHub.Publication(element: .session(.message(message)), claim: claim), from: connection, decided: decided)
        }
        if counting?.connection == connection {
          counting!.messages += 1
          counting!.bytes += claim.bytes
        } else {
          if let counting { countUntaken(counting.connection, messages: counting.messages, bytes: counting.bytes) }
          counting = (connection, 1, claim.bytes)
        }
      case .settled(let report):
        settled(report)
      case .transferFrame(let frame, let peer, let carrier):
        transferFrameArrived(frame, from: peer, via: carrier)
      case .federate(let output):
        federationLink?.handle(output)
      case .sessionMoved(let peer):
        // What was in flight on the old connection is lost: transfers to the peer pause and
        // offer again on the new one (the answer says where to resume).
        transferPeerLost(peer)
      }
    }
    if let counting { countUntaken(counting.connection, messages: counting.messages, bytes: counting.bytes) }
    flushPublishing()
    wakeIdleWaitersIfSettled()
    if !windowWaiters.isEmpty { wakeWindowWaitersWithRoom() }
  }

  /// What an action moved out by ``perform(taking:)`` leaves behind (no payload to release;
  /// never performed).
  static var spentAction: SessionAction { .sessionMoved(PeerID(high: 0, low: 0)) }

  /// An empty action list, with the storage of an earlier one when there is one: a
  /// DELIVERED answers up to a thousand messages, and lists of that size, made afresh for each
  /// frame, cost a page fault for every 4 KiB (glibc maps allocations of 128 KiB and more
  /// anew each time). Calls may nest; an inner one gets a new list.
  func takeActions() -> [SessionAction] {
    var actions: [SessionAction] = []
    swap(&actions, &spareActions)
    return actions
  }

  /// Gives a list from ``takeActions()`` back, emptied, unless it grew beyond what is worth keeping.
  func recycle(_ actions: inout [SessionAction]) {
    actions.removeAll(keepingCapacity: true)
    if actions.capacity <= Self.spareCapacity, actions.capacity > spareActions.capacity { swap(&actions, &spareActions) }
  }

  /// The largest list kept between calls (a frame turn delivers at most 1024 frames).
  static var spareCapacity: Int { 4096 }

  /// Publishes what ``perform(taking:)`` gathered (received messages and receipts, in order) at
  /// once: one lock of the hub per batch. Whatever else publishes calls this first, so that
  /// nothing overtakes them (an event from a nested call, messages held back).
  func flushPublishing() {
    guard !publishing.isEmpty else { return }
    hub.publish(publishing)
    publishing.removeAll(keepingCapacity: publishing.capacity <= Self.spareCapacity)
  }

  /// A message is with the application: the connection stops being read while too much of
  /// what it sent is not taken yet.
  private func countUntaken(_ id: ConnectionID, messages: Int, bytes: Int) {
    // In place: a get and a set hashed the id twice per message.
    var slot = untaken.index(forKey: id)
    if slot == nil {
      untaken[id] = (0, 0)
      slot = untaken.index(forKey: id)
    }
    let index = slot!
    untaken.values[index].messages += messages
    untaken.values[index].bytes += bytes
    let count = untaken.values[index]
    guards.untakenBytes += bytes
    guards.untakenMessages += messages
    if untakenStopsReading(id, count), let socket = connections[id], !socket.isReadingPaused {
      socket.pauseReading()
      machine.readingPaused(id, true, now: now)
    }
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
    if !failures.isEmpty { perform(taking: &failures) }
  }

  func noteFailure(_ message: Frame.Message, _ id: ConnectionID, _ result: TCPConnection.QueueResult, into actions: inout [SessionAction]) {
    guard message.sender == configuration.peer.id else {
      // A relay forwarding someone else's message: the origin is told.
      machine.forwardFailed(message, on: id, into: &actions)
      return
    }
    let reason: UndeliveredReason = result == .full ? .queueFull : .connectionClosed(.closedWhileClosing)
    machine.sendFailed(messageID: message.id, on: id, reason: reason, into: &actions)
  }

  /// - Parameter fresh: it starts something anew (``SessionAction/emitFresh(_:)``).
  func emit(_ event: SessionEvent, fresh: Bool = false) {
    // Nothing overtakes what was gathered before it, or its peer's messages held back (a
    // peer's "disconnected" came before its last messages).
    flushPublishing()
    if guards.heldBack.isEmpty || !holdBehindItsPeer(event, fresh: fresh) { hub.publish(.session(event), fresh: fresh) }
    switch event {
    case .connected(let peer, _):
      metPeer(peer)
      transferPeerReachable(peer.id)
    case .reachable(let peer, _): transferPeerReachable(peer.id)
    // A resumed session resends messages, not FILE frames: transfers pause while it waits,
    // and the OFFER sent again on the new connection says where each file resumes.
    case .reconnected(let peer): transferPeerReachable(peer.id)
    case .reconnecting(let peer, let attempt) where attempt <= 1: transferPeerLost(peer.id)
    case .disconnected(let peer, _), .unreachable(let peer): transferPeerLost(peer.id)
    default: break
    }
  }
}
