/// Connections the session opens by itself: a relay inviting every peer it finds
/// (`connectFound`), and any peer re-inviting a relay it lost without a goodbye, with
/// exponential backoff (1 s, 2 s, 4 s, ... up to 30 s). An invitation from a peer whose
/// session was lost that way is accepted without asking: it had been accepted already.
extension SessionStateMachine {
  struct AutoConnect: Sendable {
    var attempts = 0
    var nextAttempt: Duration
  }

  static let maximumBackoff: Duration = .seconds(30)

  /// The backoff schedule (exposed for tests).
  package static func backoffForTesting(afterAttempts attempts: Int) -> Duration { backoff(afterAttempts: attempts) }

  static func backoff(afterAttempts attempts: Int) -> Duration {
    let seconds = 1 << min(max(attempts - 1, 0), 5)
    return min(.seconds(seconds), maximumBackoff)
  }

  /// A peer was found: a relay with `connectFound` (or a lost relay's peer) invites it soon.
  mutating func autoConnectOnDiscovery(_ id: PeerID) {
    guard !isShuttingDown, peers[id]?.session == nil, !isSuspended(id) else { return }
    let lostRelay = resumable.contains(id) && peers[id]?.discovered?.advertisement.isRelay == true
    guard configuration.connectFound || lostRelay else { return }
    // A federated relay leaves the relays it finds alone: NATS joins the sites.
    if isFederated, !lostRelay, peers[id]?.discovered?.advertisement.isRelay == true { return }
    if autoConnect[id] == nil { autoConnect[id] = AutoConnect(nextAttempt: .zero) }
  }

  /// A session ended: decide whether to try again by ourselves.
  mutating func autoConnectAfterSession(_ id: PeerID, reason: DisconnectReason, now: Duration) {
    switch reason {
    case .goodbye(.leaving), .goodbye(.shuttingDown), .local(.leaving), .local(.shuttingDown), .local(.replaced), .goodbye(.replaced):
      // Deliberate: nobody wants the session back (or a newer one replaced it).
      resumable.remove(id)
      autoConnect[id] = nil
    default:
      resumable.insert(id)
      if configuration.connectFound || peers[id]?.isRelay == true {
        autoConnect[id] = AutoConnect(nextAttempt: now + Self.backoff(afterAttempts: 1))
      }
    }
  }

  /// Runs due attempts (from ``tick(now:into:)``).
  mutating func runAutoConnect(now: Duration, into actions: inout [SessionAction]) {
    guard !isShuttingDown, !autoConnect.isEmpty else { return }
    for id in autoConnect.keys.sorted() {
      guard var entry = autoConnect[id], entry.nextAttempt <= now else { continue }
      guard let record = peers[id], record.session == nil else {
        autoConnect[id] = nil
        continue
      }
      if record.outbound != nil || isSuspended(id) || record.discovered?.endpoints.isEmpty != false {
        // Busy, or not on the network now: look again in a second.
        entry.nextAttempt = now + .seconds(1)
        autoConnect[id] = entry
        continue
      }
      entry.attempts += 1
      entry.nextAttempt = now + Self.backoff(afterAttempts: entry.attempts)
      autoConnect[id] = entry
      invite(id, context: [], now: now, into: &actions)
    }
  }

  /// The peer declined on purpose: stop inviting it until it is found anew.
  mutating func autoConnectDeclined(_ id: PeerID, reason: DeclineReason) {
    if reason == .declined || reason == .notAllowed { autoConnect[id] = nil }
  }
}
