/// Connections the session opens by itself: a relay inviting every peer it finds
/// (`connectFound`), and any peer re-inviting a relay it lost without a goodbye, with
/// exponential backoff (1 s, 2 s, 4 s, ... up to 30 s). An invitation from a peer whose
/// session was lost that way is accepted without asking: it had been accepted already.
extension SessionStateMachine {
  struct AutoConnect: Sendable {
    var attempts = 0
    var nextAttempt: Duration
    /// When it joined, in order (``autoConnectSequence``).
    var sequence: UInt64 = 0
  }

  /// Adds `id` to those the session invites by itself, after those already waiting.
  mutating func queueAutoConnect(_ id: PeerID, nextAttempt: Duration) {
    autoConnectSequence &+= 1
    autoConnect[id] = AutoConnect(nextAttempt: nextAttempt, sequence: autoConnectSequence)
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
    let lostRelay = resumable[id] != nil && peers[id]?.discovered?.advertisement.isRelay == true
    guard configuration.connectFound || lostRelay else { return }
    // A federated relay leaves the relays it finds alone: NATS joins the sites.
    if isFederated, !lostRelay, peers[id]?.discovered?.advertisement.isRelay == true { return }
    if autoConnect[id] == nil { queueAutoConnect(id, nextAttempt: .zero) }
  }

  /// A session ended: decide whether to try again by ourselves.
  mutating func autoConnectAfterSession(_ id: PeerID, reason: DisconnectReason, now: Duration) {
    switch reason {
    case .goodbye(.leaving), .goodbye(.shuttingDown), .local(.leaving), .local(.shuttingDown), .local(.replaced), .goodbye(.replaced):
      // Deliberate: nobody wants the session back (or a newer one replaced it).
      resumable[id] = nil
      autoConnect[id] = nil
    default:
      // Only what the network did makes the peer's next invitation welcome without asking:
      // one that broke the protocol, sent an ERROR or said goodbye otherwise is asked about
      // again (each such ending was remembered for the life of the process).
      switch reason {
      case .timedOut, .connectionLost, .securityFailure, .notResumed: noteResumable(id, now: now)
      default: resumable[id] = nil
      }
      if configuration.connectFound || peers[id]?.isRelay == true {
        queueAutoConnect(id, nextAttempt: now + Self.backoff(afterAttempts: 1))
      }
    }
  }

  /// How long after the network took a session its peer is welcome again without asking.
  static let resumableWindow = Duration.seconds(600)
  /// The most peers remembered so (the oldest go first).
  static let maximumResumable = 4096

  mutating func noteResumable(_ id: PeerID, now: Duration) {
    resumable[id] = now
    guard resumable.count > Self.maximumResumable else { return }
    resumable = resumable.filter { now - $0.value <= Self.resumableWindow }
    while resumable.count > Self.maximumResumable, let oldest = resumable.min(by: { $0.value < $1.value })?.key { resumable[oldest] = nil }
  }

  /// Whether an invitation of `id` is accepted without asking because the network took its
  /// last session (``resumable``) not long ago. Never past the accept policy: under `.none`
  /// only the allow-list gets in, under `.known` only verified peers (a peer taken off the
  /// allow-list came back in this way, whenever its last session had ended with a lost
  /// connection).
  func acceptsAgain(_ id: PeerID, now: Duration) -> Bool {
    guard let since = resumable[id], now - since <= Self.resumableWindow else { return false }
    switch configuration.acceptPolicy {
    case .none: return false
    case .known: return configuration.verifiedPeers.contains(id)
    case .ask, .all: return true
    }
  }

  /// The most invitations the session has on their way by itself at once. Anyone can
  /// publish DNS-SD records: a relay with `connectFound` dialled every made-up id at once,
  /// each at an address of the publisher's choosing, as often as the backoff allowed (a
  /// reflector, and its descriptors ran out).
  static let maximumAutoConnectsInFlight = 16
  /// ... and to one address (the first a peer's records name).
  static let maximumAutoConnectsPerAddress = 2

  /// Runs due attempts (from ``tick(now:into:)``), at most ``maximumAutoConnectsInFlight``
  /// at once and ``maximumAutoConnectsPerAddress`` to one address: the others wait a second.
  /// Peers never tried go first, then those tried fewest times, each in the order they came:
  /// made-up ids cannot take the places ahead of a real peer by sorting first (they went in
  /// the order of their ids).
  mutating func runAutoConnect(now: Duration, into actions: inout [SessionAction]) {
    guard !isShuttingDown, !autoConnect.isEmpty else { return }
    var inFlight = 0
    var perAddress: [String: Int] = [:]
    for id in autoConnect.keys where peers[id]?.outbound != nil {
      inFlight += 1
      if let host = peers[id]?.discovered?.endpoints.first?.host { perAddress[host, default: 0] += 1 }
    }
    let order = autoConnect.sorted { ($0.value.attempts, $0.value.sequence) < ($1.value.attempts, $1.value.sequence) }.map(\.key)
    for id in order {
      guard var entry = autoConnect[id], entry.nextAttempt <= now else { continue }
      guard let record = peers[id], record.session == nil else {
        autoConnect[id] = nil
        continue
      }
      let host = record.discovered?.endpoints.first?.host
      if record.outbound != nil || isSuspended(id) || host == nil || inFlight >= Self.maximumAutoConnectsInFlight
        || perAddress[host!, default: 0] >= Self.maximumAutoConnectsPerAddress
      {
        // Busy, not on the network now, or enough on their way: look again in a second.
        entry.nextAttempt = now + .seconds(1)
        autoConnect[id] = entry
        continue
      }
      entry.attempts += 1
      entry.nextAttempt = now + Self.backoff(afterAttempts: entry.attempts)
      autoConnect[id] = entry
      invite(id, context: [], now: now, into: &actions)
      inFlight += 1
      perAddress[host!, default: 0] += 1
    }
  }

  /// The peer declined on purpose: stop inviting it until it is found anew.
  mutating func autoConnectDeclined(_ id: PeerID, reason: DeclineReason) {
    if reason == .declined || reason == .notAllowed { autoConnect[id] = nil }
  }
}
