/// A federated relay's bookkeeping of what crosses the federation, as a plain value (the
/// shell that talks to NATS owns one): which stored messages it handed to its peers and
/// waits to see acknowledged, and which messages it published and may have to report
/// expired.
///
/// `Token` is whatever acknowledges a stored message in the store (NATS: the reply subject
/// of a JetStream delivery). The store delivers a message at least once: again after a relay
/// restarted or its NATS connection failed over, again after the acknowledgement wait. The
/// ledger makes that exactly once for the peer: a message already on its way is not passed
/// on again, only its new token is remembered, and every token is acknowledged once the
/// peer's receipt comes.
package struct FederationLedger<Token: Hashable & Sendable>: Sendable {
  package struct Key: Hashable, Sendable {
    package let origin: PeerID
    package let id: UInt64
    package let recipient: PeerID

    package init(origin: PeerID, id: UInt64, recipient: PeerID) {
      self.origin = origin
      self.id = id
      self.recipient = recipient
    }
  }

  /// How long a published message may wait for its recipient.
  package let limit: Duration
  /// The most published messages remembered for expiry; the oldest are forgotten first.
  package let capacity: Int
  /// Stored messages handed to peers here, waiting for their receipts: the tokens to
  /// acknowledge then.
  private var waiting: [Key: [Token]] = [:]
  /// Published messages in the order they were published, with their deadline (the limit
  /// is the same for all, so that is also the order of the deadlines).
  private var deadlines = RingBuffer<(key: Key, deadline: Duration)>()
  /// Published messages not answered yet (a receipt or a report came back).
  private var unanswered: Set<Key> = []

  package init(limit: Duration, capacity: Int = 1 << 20) {
    self.limit = limit
    self.capacity = capacity
  }

  /// How many stored messages wait for a receipt here.
  package var waitingCount: Int { waiting.count }
  /// How many published messages wait for an answer.
  package var unansweredCount: Int { unanswered.count }

  // MARK: Deliveries to the peers here

  /// The store delivered a message for a peer here.
  /// - Returns: `true` when it is to be passed on; `false` when it is a copy of one already
  ///   on its way (its token is remembered, and acknowledged with the first one).
  package mutating func delivering(_ token: Token, origin: PeerID, id: UInt64, recipient: PeerID) -> Bool {
    let key = Key(origin: origin, id: id, recipient: recipient)
    if waiting[key] != nil {
      if !waiting[key]!.contains(token) { waiting[key]!.append(token) }
      return false
    }
    waiting[key] = [token]
    return true
  }

  /// The peer could not take a delivery after all (it left): forget it, unacknowledged.
  package mutating func notDelivered(origin: PeerID, id: UInt64, recipient: PeerID) {
    waiting[Key(origin: origin, id: id, recipient: recipient)] = nil
  }

  /// `recipient` acknowledged messages of `origin`. - Returns: the tokens to acknowledge in
  /// the store (none for messages that did not come from it).
  package mutating func receipted(recipient: PeerID, origin: PeerID, ids: [UInt64]) -> [Token] {
    var tokens: [Token] = []
    for id in ids {
      if let done = waiting.removeValue(forKey: Key(origin: origin, id: id, recipient: recipient)) { tokens += done }
    }
    return tokens
  }

  /// A peer's session here ended: what it did not acknowledge stays in the store, for the
  /// relay where it connects next (unacknowledged, so delivered again there).
  package mutating func departed(_ recipient: PeerID) {
    waiting = waiting.filter { $0.key.recipient != recipient }
  }

  // MARK: What this relay published

  /// A message was published for `recipient` at `now`.
  package mutating func published(origin: PeerID, id: UInt64, recipient: PeerID, at now: Duration) {
    let key = Key(origin: origin, id: id, recipient: recipient)
    guard unanswered.insert(key).inserted else { return }
    deadlines.append((key, now + limit))
    while deadlines.count > capacity, let first = deadlines.popFirst() { unanswered.remove(first.key) }
  }

  /// A receipt or report for published messages came back: they do not expire.
  package mutating func answered(origin: PeerID, ids: [UInt64], recipient: PeerID) {
    for id in ids { unanswered.remove(Key(origin: origin, id: id, recipient: recipient)) }
  }

  /// The published messages whose deadline passed without an answer (each once).
  package mutating func expired(at now: Duration) -> [Key] {
    var due: [Key] = []
    while let first = deadlines.first, first.deadline <= now {
      deadlines.popFirst()
      if unanswered.remove(first.key) != nil { due.append(first.key) }
    }
    return due
  }

  /// When the next published message expires, if any waits.
  package var nextDeadline: Duration? { deadlines.first?.deadline }
}
