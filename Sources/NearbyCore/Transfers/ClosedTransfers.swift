/// A receiver's memory of the transfers that ended, and how (PROTOCOL.md 13.8, "Finished
/// transfers"), so that a sender that missed the end is answered rather than asked again.
///
/// Bounded: at most ``perPeer`` of one peer's, and ``limit`` in all; the oldest go first. (It
/// was a dictionary that only grew: a peer sending OFFER and CANCEL with new ids, about 60
/// bytes a pair, made the receiver keep an entry for each for as long as it ran.) A transfer
/// forgotten this way is, at worst, offered again and asked about as a new one.
package struct ClosedTransfers: Sendable {
  package static let defaultLimit = 4096
  package static let defaultPerPeer = 256

  package let limit: Int
  package let perPeer: Int

  private struct Entry: Sendable {
    var peer: PeerID
    var reason: UInt8
    var serial: UInt64
  }

  /// An insertion: an entry is still remembered when its serial is the one in `entries`.
  private struct Noted: Sendable {
    var id: TransferID
    var serial: UInt64
  }

  private var entries: [TransferID: Entry] = [:]
  /// Insertions, oldest first: all of them, and each peer's.
  private var order = RingBuffer<Noted>()
  private var peers: [PeerID: RingBuffer<Noted>] = [:]
  private var counts: [PeerID: Int] = [:]
  private var serial: UInt64 = 0

  package init(limit: Int = defaultLimit, perPeer: Int = defaultPerPeer) {
    precondition(limit > 0 && perPeer > 0, "ClosedTransfers keeps at least one")
    self.limit = limit
    self.perPeer = perPeer
  }

  /// How many are remembered.
  package var count: Int { entries.count }

  /// How `id` ended, and with whom, if it is remembered.
  package subscript(id: TransferID) -> (peer: PeerID, reason: UInt8)? {
    entries[id].map { ($0.peer, $0.reason) }
  }

  /// How many of `peer`'s are remembered.
  package func count(of peer: PeerID) -> Int { counts[peer] ?? 0 }

  /// Remembers that `id`, `peer`'s, ended with `reason` (0: completed), forgetting the oldest
  /// of that peer's, or of all, beyond the limits.
  /// - Returns: the ids forgotten for want of room (their records on disk can go too).
  @discardableResult
  package mutating func insert(_ id: TransferID, peer: PeerID, reason: UInt8) -> [TransferID] {
    if entries[id] != nil { forget(id) }
    var forgotten: [TransferID] = []
    serial += 1
    let noted = Noted(id: id, serial: serial)
    entries[id] = Entry(peer: peer, reason: reason, serial: serial)
    counts[peer, default: 0] += 1
    order.append(noted)
    peers[peer, default: RingBuffer()].append(noted)
    // The peer's own first, then everyone's; what went already is skipped as it comes up.
    while count(of: peer) > perPeer, let oldest = firstCurrent(ofPeer: peer) {
      forget(oldest.id)
      forgotten.append(oldest.id)
    }
    while entries.count > limit, let oldest = firstCurrentOverall() {
      forget(oldest.id)
      forgotten.append(oldest.id)
    }
    // A peer's own limit leaves what it forgot anywhere in the overall order: kept from
    // growing with every insertion, in time proportional to the insertions since.
    if order.count > 2 * entries.count + 64 { keepCurrent(&order) }
    return forgotten
  }

  /// How many insertions the overall order holds, remembered or not (for tests of its bound).
  package var orderLength: Int { order.count }

  private func isCurrent(_ noted: Noted) -> Bool { entries[noted.id]?.serial == noted.serial }

  private mutating func firstCurrent(ofPeer peer: PeerID) -> Noted? {
    dropStale(ofPeer: peer)
    return peers[peer]?.first
  }

  private mutating func firstCurrentOverall() -> Noted? {
    while let first = order.first, !isCurrent(first) { order.popFirst() }
    return order.first
  }

  /// Removes what went from the front of a peer's queue (and the queue once empty); and
  /// from anywhere in it once what went outnumbers what is remembered (an id taken over by
  /// another peer goes from the middle: two peers taking turns grew both queues by one
  /// each time).
  private mutating func dropStale(ofPeer peer: PeerID) {
    guard var queue = peers.removeValue(forKey: peer) else { return }
    while let first = queue.first, !isCurrent(first) { queue.popFirst() }
    if queue.count > 2 * count(of: peer) + 16 { keepCurrent(&queue) }
    if !queue.isEmpty { peers[peer] = queue }
  }

  /// How many insertions a peer's queue holds, remembered or not (for tests of its bound).
  package func queueLength(of peer: PeerID) -> Int { peers[peer]?.count ?? 0 }

  /// Drops from `queue` every insertion no longer remembered, keeping the order.
  private func keepCurrent(_ queue: inout RingBuffer<Noted>) {
    for noted in queue.removeAll() where isCurrent(noted) { queue.append(noted) }
  }

  private mutating func forget(_ id: TransferID) {
    guard let entry = entries.removeValue(forKey: id) else { return }
    if let count = counts[entry.peer], count > 1 {
      counts[entry.peer] = count - 1
    } else {
      counts[entry.peer] = nil
    }
    dropStale(ofPeer: entry.peer)
  }
}
