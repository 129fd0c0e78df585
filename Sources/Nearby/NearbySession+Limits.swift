import NearbyCore
import NearbyTransport

/// What keeps one hostile or careless peer from costing the session unbounded memory or the
/// I/O thread: the receive budget shared by all connections, each connection's share of a
/// loop iteration, and the per-source limit on connections being set up. Confined to the
/// session's I/O thread, like the actor's own state.
final class SessionGuards: @unchecked Sendable {
  let budget: ReceiveBudget
  let limits: ReceiveLimits
  // The stored properties below are `@exclusivity(unchecked)`: only the session's loop thread
  // uses them, and the runtime's check of every access to a class's property was about a tenth
  // of the instructions of a message's round trip (callgrind; see the README's benchmarks).
  @exclusivity(unchecked) var admission: SourceAdmission
  /// Sources being refused, with how many of their connections were: reported once when it
  /// starts and once when it ends, not once per connection of a flood.
  @exclusivity(unchecked) var refusedSources: [String: Int] = [:]
  /// Bytes of received messages not yet taken by the application, all connections together.
  @exclusivity(unchecked) var untakenBytes = 0
  /// Connections not read because all together hold too much untaken: read again once the
  /// total is down to half.
  @exclusivity(unchecked) var pausedForAll: Set<ConnectionID> = []
  /// Received messages not yet taken by the application, all connections together (those in
  /// the hub and those held back from it).
  @exclusivity(unchecked) var untakenMessages = 0
  /// Received messages of connections that have their fair share in the hub already, in
  /// arrival order: published as the application takes theirs (NearbySession+FairShare.swift).
  @exclusivity(unchecked) var heldBack: [ConnectionID: HeldMessages] = [:]

  init(_ configuration: SessionConfiguration) {
    budget = ReceiveBudget(maximumBytes: configuration.maximumPartialFrameBytes)
    limits = ReceiveLimits(
      bytesPerTurn: configuration.receiveBytesPerTurn, framesPerTurn: configuration.receiveFramesPerTurn, budget: budget)
    admission = SourceAdmission(maximumPerSource: configuration.maximumPendingConnectionsPerSource)
  }
}

extension NearbySession {
  /// The listener's question about each connection it accepts (on the I/O thread, before
  /// anything is made for the connection).
  nonisolated var admissionCheck: AdmissionCheck {
    { [weak self] id, remote in
      guard let self else { return nil }
      return self.whileOnLoop { $0.admit(id, from: remote) }
    }
  }

  /// Takes a connection unless its source already has too many that are being set up.
  func admit(_ id: ConnectionID, from remote: SocketAddress) -> String? {
    let source = remote.sourceKey
    let refusal = guards.admission.admit(id, from: source) { counted in
      // A connection closing still counts until it is gone: a host whose handshakes fail
      // and that never closes its end holds each for the linger (see connectionAccepted).
      switch machine.connectionState(counted) {
      case nil, .connected?, .closed?: false
      default: true
      }
    }
    if let refusal {
      if guards.refusedSources[source] == nil {
        emit(.status(.connectionRejected(peer: nil, reason: "refusing connections from \(source): \(refusal)")))
      }
      guards.refusedSources[source, default: 0] += 1
    } else if let refused = guards.refusedSources.removeValue(forKey: source) {
      emit(
        .status(
          .connectionRejected(
            peer: nil, reason: "refused \(refused) connection\(refused == 1 ? "" : "s") from \(source) while it had too many being set up")))
    }
    return refusal
  }

  /// The receive budget closed connection `id`: ERROR `resourceExhausted`, then close.
  func receiveBudgetExhausted(_ id: ConnectionID, _ detail: String, into actions: inout [SessionAction]) {
    let peer = machine.connectionPeer(id)
    emit(.status(.connectionRejected(peer: peer, reason: "the receive memory budget is exhausted: \(detail)")))
    machine.limitExceeded(id, code: .resourceExhausted, detail: "the receive memory budget is exhausted: \(detail)", now: now, into: &actions)
  }

  // MARK: Messages the application has not taken

  /// Whether connection `id`, with `count` untaken, must stop being read: it holds more than
  /// its share, or all connections together hold more than
  /// ``SessionConfiguration/maximumUntakenBytesInAll``.
  func untakenStopsReading(_ id: ConnectionID, _ count: (messages: Int, bytes: Int)) -> Bool {
    if count.messages > configuration.maximumUntakenMessages || count.bytes > configuration.maximumUntakenBytes { return true }
    guard guards.untakenBytes > configuration.maximumUntakenBytesInAll else { return false }
    guards.pausedForAll.insert(id)
    return true
  }

  /// Whether connection `id`, paused with `count` untaken, may be read again: its own count
  /// and the total are down to half their limits. When only the total stands in the way,
  /// the connection is read again once the total is down (``resumeConnectionsPausedForAll()``).
  func untakenAllowsReading(_ id: ConnectionID, _ count: (messages: Int, bytes: Int)) -> Bool {
    guard count.messages <= configuration.maximumUntakenMessages / 2, count.bytes <= configuration.maximumUntakenBytes / 2 else { return false }
    guard guards.untakenBytes <= configuration.maximumUntakenBytesInAll / 2 else {
      guards.pausedForAll.insert(id)
      return false
    }
    return true
  }

  /// Once the total is down to half, reads again the connections it kept paused (whose own
  /// messages may all have been taken already, so that no claim of theirs would).
  func resumeConnectionsPausedForAll() {
    guard !guards.pausedForAll.isEmpty, guards.untakenBytes <= configuration.maximumUntakenBytesInAll / 2 else { return }
    let paused = guards.pausedForAll
    guards.pausedForAll.removeAll()
    for id in paused {
      // One still over its own share resumes when its own claims settle.
      guard let socket = connections[id], socket.isReadingPaused, untakenAllowsReading(id, untaken[id] ?? (0, 0)) else { continue }
      machine.readingPaused(id, false, now: now)
      socket.resumeReading()
    }
  }

  /// What callers wait for (diagnostics and tests): senders waiting for room in a queue or
  /// a resend window, waiters for a delivery report or for all deliveries, and whether any
  /// of our messages still waits for an answer.
  package var waitingFigures: String {
    "senders waiting for a queue \(sendWaiters.count), for a window \(windowWaiters.count); delivery waiters \(deliveryWaiters.count), idle waiters \(idleWaiters.count); pending deliveries \(inspect { $0.hasPendingDeliveries })"
  }

  /// Received messages not yet taken (all connections), and connections not read for it.
  package var untakenFigures: (bytes: Int, pausedConnections: Int) {
    (guards.untakenBytes, connections.values.filter(\.isReadingPaused).count)
  }

  /// The receive budget's figures (diagnostics and tests): bytes held now, the most held at
  /// once, and how many connections it closed.
  package var receiveBudgetFigures: (held: Int, peak: Int, closed: Int) {
    (guards.budget.heldBytes, guards.budget.peakBytes, guards.budget.exhaustedConnections)
  }
}
