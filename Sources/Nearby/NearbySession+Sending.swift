import NearbyCore
import NearbyTransport

#if canImport(Glibc)
  import Glibc
#endif

extension NearbySession {
  /// The largest message body the protocol carries: 1 MiB.
  public nonisolated static var maximumMessageSize: Int { ProtocolLimits.maximumBodyLength }

  /// Sends a message: reliable and in order per peer.
  ///
  /// It returns once the message is queued for every recipient it can reach. When a
  /// recipient's queue is full (it reads more slowly than we send), or the messages it has not
  /// acknowledged fill its resend window (``SessionConfiguration/resendWindowBytes``), it
  /// **suspends** until there is room, so a fast sender goes at the pace of its slowest peer.
  /// A recipient whose session is reconnecting (`SessionEvent.reconnecting`) gets the message
  /// when the session is back. Each recipient
  /// answers: `SessionEvent.delivered(messageID:to:)` once its application took the
  /// message, or an `undelivered` `SessionEvent.error(_:)`; ``delivery(of:)`` waits for
  /// all the answers. A named recipient that cannot be reached is reported undelivered
  /// while the others still get the message.
  ///
  /// Called on the session's I/O thread (a task that prefers ``executor``), it queues the
  /// message without any thread switch.
  /// - Parameters:
  ///   - body: the bytes (at most ``maximumMessageSize``).
  ///   - recipients: `.all` connected peers (the default), or named ones.
  /// - Returns: the message's id.
  /// - Throws: ``SendError`` when nothing was sent: nobody reachable, a body too large,
  ///   the session not running.
  @discardableResult
  public nonisolated(nonsending) func send(_ body: [UInt8], to recipients: Recipients = .all) async throws(SendError) -> MessageID {
    if loop.inLoop {
      switch attemptSendOnLoop(body, to: recipients) {
      case .sent(let id): return id
      case .refused(let error): throw error
      case .mustWait, .mustWaitForWindows: break
      }
    }
    return try await sendWaitingForRoom(body, to: recipients)
  }

  /// Waits until every recipient of one of our messages has answered.
  /// - Returns: the report, or `nil` when `id` is not one of our messages (or so old that
  ///   it was forgotten: the last 1024 settled ones are kept), the session stopped first, or
  ///   the waiting task was cancelled.
  public func delivery(of id: MessageID) async -> DeliveryReport? {
    if let report = inspect({ $0.deliveryReport(id) }), report.isComplete { return report }
    guard inspect({ $0.deliveryReport(id) }) != nil, state == .running else { return nil }
    return await waitCancellably(
      cancelled: nil,
      register: {
        deliveryWaiters.add($0, key: id, token: $1)
        machine.reportsSettlements = true
      },
      cancel: { session, token in
        defer { session.machine.reportsSettlements = !session.deliveryWaiters.isEmpty }
        return session.deliveryWaiters.cancel(token: token)
      })
  }

  /// Waits until every message we sent so far has been delivered or has failed (or the
  /// session stopped, or the waiting task was cancelled).
  public func waitForDeliveries() async {
    guard inspect({ $0.hasPendingDeliveries }), state == .running else { return }
    await waitCancellably(cancelled: (), register: { idleWaiters.add($0, key: 0, token: $1) }, cancel: { $0.idleWaiters.cancel(token: $1) })
  }

  /// The peers a message to `recipients` would reach now and that would answer it. (To show
  /// whom a message went to, ask ``recipients(of:)`` once it is sent: peers come and go
  /// between this call and a send.)
  public func reachablePeers(for recipients: Recipients) -> [Peer] { machine.expectedRecipients(recipients) }

  /// Every peer one of our messages went to, fixed when it was sent, until each has
  /// answered: with `SessionEvent.delivered(messageID:to:)` or an `undelivered` error (a
  /// named recipient that could not be reached has answered already). `nil` when `id` is not
  /// one of our messages, or every recipient has answered (then ``delivery(of:)`` says how).
  ///
  /// To show "sent to …" before any answer, ask in the same stretch as the send, isolated
  /// to the session, so that nothing runs in between:
  ///
  /// ```swift
  /// func send(_ body: [UInt8], on session: isolated NearbySession) async throws -> (MessageID, [Peer]) {
  ///   let id = try await session.send(body, to: .all)
  ///   return (id, session.recipients(of: id) ?? [])
  /// }
  /// ```
  public func recipients(of id: MessageID) -> [Peer]? { machine.recipients(of: id) }

  /// Suspends until resumed with a value through the waiter table that `register` puts the
  /// continuation in, or with `cancelled` when the task is cancelled (`cancel` takes it out
  /// again). The continuation is resumed exactly once.
  func waitCancellably<Value: Sendable>(
    cancelled: Value, register: (CheckedContinuation<Value, Never>, UInt64) -> Void,
    cancel: @escaping @Sendable (isolated NearbySession, UInt64) -> CheckedContinuation<Value, Never>?
  ) async -> Value {
    let token = nextWaiterToken()
    return await withTaskCancellationHandler {
      // `isolation: self`, not the default: this closure does not capture `self`, so it is
      // not isolated to the session, and with the default (`#isolation`, nil in here) the
      // body can run on Swift's thread pool. It did, in a chat: waiters registered there
      // while the loop thread took others out, and the chat crashed with "Index out of
      // range" in `Waiters`. The precondition makes any such path fail at once.
      await withCheckedContinuation(isolation: self) { continuation in
        precondition(loop.isCurrent, "waiters of the session are registered on its loop")
        if Task.isCancelled {
          continuation.resume(returning: cancelled)
        } else {
          register(continuation, token)
        }
      }
    } onCancel: {
      // Runs after the job that stored the continuation (the loop runs one job at a time).
      loop.execute { [self] in
        whileOnLoop { session in cancel(session, token)?.resume(returning: cancelled) }
      }
    }
  }

  enum SendAttempt {
    case sent(MessageID)
    case refused(SendError)
    /// A connection the message goes to is full: wait for room, then try again.
    case mustWait([ConnectionID])
    /// The resend window of a recipient is full: wait until it acknowledges, then try again.
    case mustWaitForWindows([PeerID])
  }

  private func sendWaitingForRoom(_ body: [UInt8], to recipients: Recipients) async throws(SendError) -> MessageID {
    while true {
      switch attemptSend(body, to: recipients) {
      case .sent(let id): return id
      case .refused(let error): throw error
      // The loop may run between the attempt and the registration (this task reaches the
      // session through a job of its own): a queue that drained or a window that emptied in
      // between has already told, and nobody was waiting yet. So the registration looks
      // again and tries at once if so. (Without it, `nearby bench --only throughput` hung
      // in 5 of 20 runs, with a sender waiting for room on a connection with nothing queued.)
      case .mustWait(let full):
        let woken = await waitCancellably(
          cancelled: false,
          register: { continuation, token in
            if full.contains(where: { !(connections[$0]?.notifyWhenWritable() ?? false) }) {
              continuation.resume(returning: true)
            } else {
              sendWaiters.add(continuation, key: full, token: token)
            }
          }, cancel: { $0.sendWaiters.cancel(token: $1) })
        if !woken { throw .cancelled }
      case .mustWaitForWindows(let peers):
        let woken = await waitCancellably(
          cancelled: false,
          register: { continuation, token in
            if peers.contains(where: { machine.windowHasRoom($0) }) {
              continuation.resume(returning: true)
            } else {
              windowWaiters.add(continuation, key: peers, token: token)
            }
          }, cancel: { $0.windowWaiters.cancel(token: $1) })
        if !woken { throw .cancelled }
      }
    }
  }

  /// Calls `body` with the state machine where it lives. Calling a non-mutating method on
  /// the stored property directly makes Swift copy the whole struct first (a class's stored
  /// property is loaded by copy for a call that could reach the class): a retain and a release
  /// of each of its collections, per call, on every message. Through `inout` it is borrowed in
  /// place.
  @inline(__always)
  func inspect<T, E: Error>(_ body: (inout SessionStateMachine) throws(E) -> T) throws(E) -> T { try body(&machine) }

  /// Queues the message unless a connection it goes to is full (or a resend window).
  func attemptSend(_ body: [UInt8], to recipients: Recipients) -> SendAttempt {
    guard state == .running, !shutdownRequested else { return .refused(.notRunning) }
    guard body.count <= ProtocolLimits.maximumBodyLength else {
      return .refused(.bodyTooLarge(byteCount: body.count, limit: ProtocolLimits.maximumBodyLength))
    }
    if let route = inspect({ $0.directRoute(recipients) }) { return attemptSend(body, direct: route) }
    let routing: SessionStateMachine.Routing
    do {
      routing = try inspect { machine throws(SendError) in try machine.routing(recipients) }
    } catch {
      return .refused(error)
    }
    let limit = configuration.maximumQueuedBytes
    var full: [ConnectionID] = []
    for id in routing.targets {
      // A connection that already drained below half its limit reports nothing: try anyway.
      if let connection = connections[id], connection.queuedBytes >= limit, connection.notifyWhenWritable() { full.append(id) }
    }
    if !full.isEmpty { return .mustWait(full) }
    let windows = inspect { $0.fullWindows(routing) }
    if !windows.isEmpty { return .mustWaitForWindows(windows) }
    var actions = takeActions()
    defer { recycle(&actions) }
    do {
      let (id, _) = try machine.sendMessage(body, routing: routing, timestamp: Self.unixMilliseconds(), now: now, into: &actions)
      perform(taking: &actions)
      return .sent(id)
    } catch {
      perform(taking: &actions)
      return .refused(error)
    }
  }

  /// One peer over its own session, the usual case: the same steps as for any routing
  /// (room on the connection, room in the window, the state machine, the queue), without
  /// building a routing or a list of actions for it.
  private func attemptSend(_ body: [UInt8], direct route: SessionStateMachine.DirectRoute) -> SendAttempt {
    let connection = connections[route.connection]
    if let connection, connection.queuedBytes >= configuration.maximumQueuedBytes, connection.notifyWhenWritable() {
      return .mustWait([route.connection])
    }
    if inspect({ $0.windowIsFull(route) }) { return .mustWaitForWindows([route.peer]) }
    let (id, message) = inspect { $0.sendMessage(body, direct: route, timestamp: Self.unixMilliseconds(), now: now) }
    let result = connection?.send(message: message) ?? .closed
    if result != .queued {
      var failures = takeActions()
      defer { recycle(&failures) }
      noteFailure(message, route.connection, result, into: &failures)
      perform(taking: &failures)
    }
    return .sent(id)
  }

  /// A connection has room again (or closed): its waiting senders try again.
  func connectionReady(_ id: ConnectionID) {
    for waiter in sendWaiters.removeAll(where: { $0.contains(id) }) { waiter.resume(returning: true) }
  }

  /// Senders waiting for a resend window try again once one of their peers has room (or is
  /// gone: sending then says why).
  func wakeWindowWaitersWithRoom() {
    // (Runs of `nearby bench --only throughput` that hung with both I/O threads idle were
    // once put down to reading the machine through inspect(_:) here; the cause was a waiter
    // registered after the wake-up it needed: see sendWaitingForRoom(_:to:).)
    for waiter in windowWaiters.removeAll(where: { $0.contains { machine.windowHasRoom($0) } }) { waiter.resume(returning: true) }
  }

  /// A message of ours settled: wake whoever waits for it.
  func settled(_ report: DeliveryReport) {
    for waiter in deliveryWaiters.remove(key: report.messageID) { waiter.resume(returning: report) }
    machine.reportsSettlements = !deliveryWaiters.isEmpty
  }

  /// Wakes the callers of ``waitForDeliveries()`` once nothing of ours is pending.
  func wakeIdleWaitersIfSettled() {
    guard !idleWaiters.isEmpty, !inspect({ $0.hasPendingDeliveries }) else { return }
    for waiter in idleWaiters.removeAll(where: { _ in true }) { waiter.resume() }
  }

  static func unixMilliseconds() -> UInt64 {
    var spec = timespec()
    clock_gettime(CLOCK_REALTIME, &spec)
    return UInt64(spec.tv_sec) * 1000 + UInt64(spec.tv_nsec) / 1_000_000
  }
}
