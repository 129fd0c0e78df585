import NearbyCore
import Testing

/// A receiver's bounded memory of the transfers that ended (PROTOCOL.md 13.8).
@Suite("Closed transfers: remembered, and bounded per peer and in all")
struct ClosedTransfersTests {
  static func peer(_ n: UInt64) -> PeerID { PeerID(high: 0xAA00 | n, low: n) }
  static func transfer(_ n: UInt64) -> TransferID { TransferID(PeerID(high: 0x7700_0000 | n, low: n)) }

  @Test func whatEndedIsRemembered() {
    var closed = ClosedTransfers()
    closed.insert(Self.transfer(1), peer: Self.peer(1), reason: 0)
    closed.insert(Self.transfer(2), peer: Self.peer(2), reason: 3)
    #expect(closed[Self.transfer(1)]?.peer == Self.peer(1) && closed[Self.transfer(1)]?.reason == 0)
    #expect(closed[Self.transfer(2)]?.reason == 3)
    #expect(closed[Self.transfer(3)] == nil)
    closed.insert(Self.transfer(1), peer: Self.peer(1), reason: 5)
    #expect(closed[Self.transfer(1)]?.reason == 5 && closed.count == 2 && closed.count(of: Self.peer(1)) == 1)
  }

  /// A peer that sends OFFER and CANCEL with new ids, again and again, keeps only its latest
  /// few hundred, and nobody else's are forgotten for it.
  @Test func aFloodingPeerKeepsItsLatestAndNobodyElsesGo() {
    var closed = ClosedTransfers()
    let alice = Self.peer(1)
    let mallory = Self.peer(2)
    for n: UInt64 in 0..<10 { closed.insert(Self.transfer(n), peer: alice, reason: 0) }
    for n in 100..<100_100 { closed.insert(Self.transfer(UInt64(n)), peer: mallory, reason: 1) }
    #expect(closed.count(of: mallory) == ClosedTransfers.defaultPerPeer)
    #expect(closed.count == 10 + ClosedTransfers.defaultPerPeer)
    #expect((0..<10).allSatisfy { closed[Self.transfer($0)]?.peer == alice }, "alice's were forgotten")
    #expect(closed[Self.transfer(100_099)] != nil && closed[Self.transfer(100)] == nil)
    #expect(closed.orderLength <= 2 * closed.count + 64 + 1, "the order grew with every insertion: \(closed.orderLength)")
  }

  /// Two peers taking turns with one id (each takes it over from the other): nothing piles
  /// up in either peer's queue.
  @Test func twoPeersTakingTurnsWithOneIdKeepTheirQueuesSmall() {
    var closed = ClosedTransfers()
    let bob = Self.peer(1)
    let carol = Self.peer(2)
    closed.insert(Self.transfer(1), peer: bob, reason: 1)
    closed.insert(Self.transfer(2), peer: carol, reason: 1)
    for round in 0..<100_000 { closed.insert(Self.transfer(99), peer: round % 2 == 0 ? bob : carol, reason: 1) }
    #expect(closed.count == 3)
    #expect(closed.queueLength(of: bob) <= 2 * closed.count(of: bob) + 17, "\(closed.queueLength(of: bob))")
    #expect(closed.queueLength(of: carol) <= 2 * closed.count(of: carol) + 17, "\(closed.queueLength(of: carol))")
  }

  /// Many peers within their own limit: the oldest of all go first.
  @Test func beyondTheLimitTheOldestOfAllGo() {
    var closed = ClosedTransfers(limit: 100, perPeer: 50)
    for n in 0..<1000 { closed.insert(Self.transfer(UInt64(n)), peer: Self.peer(UInt64(n % 40)), reason: 0) }
    #expect(closed.count == 100)
    #expect((900..<1000).allSatisfy { closed[Self.transfer(UInt64($0))] != nil })
    #expect(closed[Self.transfer(899)] == nil)
  }

  /// Random insertions (ids repeating, a few peers, small limits) keep exactly what a plain
  /// list does: each peer's latest `perPeer`, then the latest `limit` of all.
  @Test(arguments: 0..<30)
  func keepsWhatAPlainListKeeps(seed: Int) {
    var random = SeededGenerator(seed: UInt64(seed) &+ 1000)
    let limit = Int(random.next() % 20) + 1
    let perPeer = Int(random.next() % 8) + 1
    var closed = ClosedTransfers(limit: limit, perPeer: perPeer)
    var list: [(id: TransferID, peer: PeerID, reason: UInt8)] = []
    for _ in 0..<400 {
      let id = Self.transfer(random.next() % 60)
      let peer = Self.peer(random.next() % 5)
      let reason = UInt8(random.next() % 4)
      let forgotten = closed.insert(id, peer: peer, reason: reason)
      list.removeAll { $0.id == id }
      list.append((id, peer, reason))
      var dropped: [TransferID] = []
      while list.count(where: { $0.peer == peer }) > perPeer { dropped.append(list.remove(at: list.firstIndex { $0.peer == peer }!).id) }
      while list.count > limit { dropped.append(list.removeFirst().id) }
      // What it forgot for want of room is said (the session removes those records from disk).
      guard forgotten == dropped else {
        Issue.record("forgot \(forgotten) where the list dropped \(dropped)")
        return
      }
      guard closed.count == list.count, list.allSatisfy({ closed[$0.id]?.peer == $0.peer && closed[$0.id]?.reason == $0.reason }) else {
        Issue.record("differs from the list after inserting \(id) of \(peer): \(closed.count) against \(list.count)")
        return
      }
    }
    #expect(closed.orderLength <= 2 * closed.count + 64 + 1)
  }
}
