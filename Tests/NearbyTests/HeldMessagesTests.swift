import NearbyCore
import Testing

@testable import Nearby

/// What one connection holds back for fairness (NearbySession+FairShare.swift) knows, after
/// each partial top-up, which peers it still concerns: an event about a peer whose held
/// messages all went need not wait, and one about a peer with something still held must.
@Suite("Held-back messages: which peers they concern")
struct HeldMessagesTests {
  static let bob = PeerID(high: 1, low: 2)
  static let carol = PeerID(high: 3, low: 4)

  static func peer(_ id: PeerID) throws -> Peer { Peer(id: id, name: try DisplayName(id == bob ? "bob" : id == carol ? "carol" : "dave")) }

  /// A message from `origin` (what a relay's connection carries for it), numbered `id`.
  static func message(from origin: PeerID, _ id: UInt64) -> EventHub.Publication {
    let claim = MessageClaim(taken: TakenMessage(connection: ConnectionID(7), origin: origin, id: id), bytes: 1)
    return EventHub.Publication(element: .session(.status(.listening(port: UInt16(id)))), claim: claim)
  }

  static func event(about peer: PeerID) throws -> EventHub.Publication {
    EventHub.Publication(element: .session(.unreachable(try Self.peer(peer))))
  }

  /// What the hub published, in order: messages by number, events by the peer they concern.
  static func published(_ hub: EventHub, count: Int) async -> [String] {
    let cursor = EventCursor(hub: hub)
    var seen: [String] = []
    for _ in 0..<count {
      guard case .session(let event) = await cursor.next() else { break }
      switch event {
      case .status(.listening(let port)): seen.append("message \(port)")
      case .unreachable(let peer): seen.append("event about \(peer.name)")
      default: seen.append("\(event)")
      }
    }
    return seen
  }

  @Test func aPeerWhoseMessagesAllWentIsNoLongerConcernedAfterAPartialTopUp() async {
    let hub = EventHub()
    var held = HeldMessages()
    held.append(Self.message(from: Self.bob, 1))
    held.append(Self.message(from: Self.bob, 2))
    held.append(Self.message(from: Self.carol, 3))
    #expect(held.concerns(Self.bob) && held.concerns(Self.carol))
    held.publish(upTo: 2, to: hub)
    #expect(!held.concerns(Self.bob), "bob's two messages were published: an event about bob need not wait behind carol's")
    #expect(held.concerns(Self.carol))
    #expect(held.messages == 1)
    held.publish(upTo: 1, to: hub)
    #expect(!held.concerns(Self.carol) && held.isEmpty)
    #expect(await Self.published(hub, count: 3) == ["message 1", "message 2", "message 3"])
  }

  /// An event held behind a peer's messages still concerns that peer once those messages
  /// went, while it waits behind another peer's message: a later event about the same peer
  /// must not overtake it.
  @Test func anEventStillHeldKeepsItsPeerConcerned() async throws {
    let hub = EventHub()
    var held = HeldMessages()
    held.append(Self.message(from: Self.bob, 1))
    held.append(Self.message(from: Self.carol, 2))
    held.append(try Self.event(about: Self.bob))
    held.append(Self.message(from: Self.carol, 3))
    held.publish(upTo: 1, to: hub)
    #expect(held.concerns(Self.bob), "the event about bob waits behind carol's message 2")
    held.publish(upTo: 1, to: hub)
    // Carol's message 2 and, right after it, the event about bob.
    #expect(!held.concerns(Self.bob))
    #expect(held.concerns(Self.carol))
    held.publish(upTo: 1, to: hub)
    #expect(!held.concerns(Self.carol) && held.isEmpty)
    #expect(await Self.published(hub, count: 4) == ["message 1", "message 2", "event about bob", "message 3"])
  }

  /// Publishing everything at once (the connection closed) leaves it concerning nobody it
  /// published; the counts never go below zero when the same peer repeats.
  @Test(arguments: [1, 2, 5, 50])
  func countsFollowEveryPublication(limit: Int) async throws {
    let hub = EventHub()
    var held = HeldMessages()
    var expected: [String] = []
    for index in 0..<20 {
      let origin = index % 3 == 0 ? Self.carol : Self.bob
      held.append(Self.message(from: origin, UInt64(index)))
      expected.append("message \(index)")
      if index % 7 == 6 {
        held.append(try Self.event(about: origin))
        expected.append("event about \(origin == Self.bob ? "bob" : "carol")")
      }
    }
    var rounds = 0
    while !held.isEmpty {
      held.publish(upTo: limit, to: hub)
      rounds += 1
    }
    #expect(rounds == (20 + limit - 1) / limit)
    #expect(!held.concerns(Self.bob) && !held.concerns(Self.carol))
    #expect(held.messages == 0)
    #expect(await Self.published(hub, count: expected.count) == expected)
  }

  // MARK: Reachability churn while messages are held

  /// A `reachable` (fresh: the peer was not reachable) or `unreachable` about `peer`.
  static func reach(_ peer: PeerID, _ reachable: Bool, fresh: Bool = false) throws -> EventHub.Publication {
    let about = try Self.peer(peer)
    let event: SessionEvent = reachable ? .reachable(about, via: try Self.peer(Self.carol)) : .unreachable(about)
    return EventHub.Publication(element: .session(event), fresh: fresh)
  }

  /// What the hub published: messages by number, reachability by peer.
  static func reachability(_ hub: EventHub, count: Int) async -> [String] {
    await reachability(EventCursor(hub: hub), count: count)
  }

  static func reachability(_ cursor: EventCursor, count: Int) async -> [String] {
    var seen: [String] = []
    for _ in 0..<count {
      guard case .session(let event) = await cursor.next() else { break }
      switch event {
      case .status(.listening(let port)): seen.append("message \(port)")
      case .reachable(let peer, _): seen.append("\(peer.name) reachable")
      case .unreachable(let peer): seen.append("\(peer.name) unreachable")
      case .delivered(let id, let peer): seen.append("\(id) delivered to \(peer.name)")
      default: seen.append("\(event)")
      }
    }
    return seen
  }

  /// A relay that adds and removes a peer from its roster without end, while that peer's
  /// message waits here for a reader that does not read: at most one event stays held,
  /// telling the last state. (Without superseding, 10 000 were held.)
  @Test(arguments: [false, true])
  func reachabilityChurnBehindAHeldMessageIsHeldOnce(startsReachable: Bool) async throws {
    let hub = EventHub()
    var held = HeldMessages()
    held.append(Self.message(from: Self.bob, 1))
    var reachable = startsReachable
    for _ in 0..<10_000 {
      reachable.toggle()
      held.append(try Self.reach(Self.bob, reachable, fresh: reachable))
      #expect(held.count <= 2)
    }
    #expect(held.messages == 1)
    held.publishAll(to: hub)
    if startsReachable {
      // Gone and back: told as a reachable (a route that changed).
      try #require(held.count == 2)
      #expect(await Self.reachability(hub, count: 2) == ["message 1", "bob reachable"])
    } else {
      // Came and went: nothing to tell.
      try #require(held.count == 1)
      #expect(await Self.reachability(hub, count: 1) == ["message 1"])
    }
  }

  /// An event held before a message of its peer is not replaced: the reader learns that bob
  /// became reachable before it reads what bob sent, and that he went after.
  @Test func anEventBeforeItsPeersMessageStaysWhereItIs() async throws {
    let hub = EventHub()
    var held = HeldMessages()
    held.append(Self.message(from: Self.carol, 1))
    held.append(try Self.reach(Self.bob, true, fresh: true))
    held.append(Self.message(from: Self.bob, 2))
    held.append(try Self.reach(Self.bob, false))
    held.append(try Self.reach(Self.carol, false))
    try #require(held.count == 5)
    while !held.isEmpty { held.publish(upTo: 1, to: hub) }
    #expect(await Self.reachability(hub, count: 5) == ["message 1", "bob reachable", "message 2", "bob unreachable", "carol unreachable"])
  }

  /// Not only a message of the peer keeps its earlier event in place: anything else about
  /// it does (here a receipt: the reader learns bob is reachable, then that he took message
  /// 7, then that he is gone).
  @Test func anEventBeforeAnythingElseOfItsPeerStaysWhereItIs() async throws {
    let hub = EventHub()
    var held = HeldMessages()
    held.append(Self.message(from: Self.carol, 1))
    held.append(try Self.reach(Self.bob, true, fresh: true))
    held.append(EventHub.Publication(element: .session(.delivered(messageID: 7, to: try Self.peer(Self.bob)))))
    held.append(try Self.reach(Self.bob, false))
    try #require(held.count == 4)
    held.publish(upTo: 1, to: hub)
    #expect(held.isEmpty)
    #expect(await Self.reachability(hub, count: 4) == ["message 1", "bob reachable", "7 delivered to bob", "bob unreachable"])
  }

  /// A newer event replaces the right one after the held messages moved up in storage
  /// (1 050 published), and does not replace one that was published already. (Read as it
  /// goes: the hub's own queue merges events once its reader is 1 024 behind.)
  @Test func replacingFindsTheEventAfterStorageMovedAndNeverOnePublished() async throws {
    let hub = EventHub()
    let cursor = EventCursor(hub: hub)
    var held = HeldMessages()
    var expected: [String] = []
    var seen: [String] = []
    for index in 0..<1100 {
      held.append(Self.message(from: Self.carol, UInt64(index)))
      expected.append("message \(index)")
    }
    held.append(try Self.reach(Self.bob, false))
    held.append(Self.message(from: Self.carol, 1100))
    expected.append("message 1100")
    held.publish(upTo: 1050, to: hub)
    seen += await Self.reachability(cursor, count: 1050)
    held.append(try Self.reach(Self.bob, true, fresh: true))
    try #require(held.count == 52, "50 messages, message 1100 and bob's reachable, which replaced his unreachable")
    expected.append("bob reachable")
    while !held.isEmpty { held.publish(upTo: 10, to: hub) }

    held.append(Self.message(from: Self.carol, 5000))
    held.append(try Self.reach(Self.bob, false))
    held.append(Self.message(from: Self.carol, 5001))
    held.publish(upTo: 1, to: hub)
    // Bob's unreachable went with message 5000: this one is news of its own.
    held.append(try Self.reach(Self.bob, true, fresh: true))
    try #require(held.count == 2, "message 5001 and bob's reachable")
    held.publishAll(to: hub)
    expected += ["message 5000", "bob unreachable", "message 5001", "bob reachable"]
    seen += await Self.reachability(cursor, count: expected.count - seen.count)
    #expect(seen == expected)
  }

  /// Random messages, reachability changes and top-ups (40 seeds): what the reader ends up
  /// knowing of each peer's reachability is the truth, it never reads an `unreachable` of a
  /// peer it did not see reachable, messages come in order, and what is held stays within
  /// the messages held and one event per peer (a peer's event held before its message
  /// counts with that message).
  @Test(arguments: 0..<40)
  func randomChurnEndsWithTheTruthAndStaysBounded(seed: Int) async throws {
    struct SplitMix {
      var state: UInt64
      mutating func next(_ bound: Int) -> Int {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return Int((z ^ (z >> 31)) % UInt64(bound))
      }
    }
    var random = SplitMix(state: UInt64(seed))
    let peers = [Self.bob, Self.carol, PeerID(high: 5, low: 6)]
    let names = try peers.map { try Self.peer($0).name }
    let hub = EventHub()
    let cursor = EventCursor(hub: hub)
    var held = HeldMessages()
    var truth = [false, false, false]
    var sent: UInt64 = 0
    // What the reader knows, read as the hub gets it (never 1 024 behind, where the hub's
    // own queue would merge events).
    var known = [false, false, false]
    var next: UInt64 = 0
    func read(_ event: HubEvent) {
      guard case .session(let event) = event else { return }
      switch event {
      case .status(.listening(let port)):
        #expect(UInt64(port) == next)
        next += 1
      case .reachable(let peer, _):
        known[names.firstIndex(of: peer.name)!] = true
      case .unreachable(let peer):
        let index = names.firstIndex(of: peer.name)!
        #expect(known[index], "unreachable of \(peer.name), not seen reachable")
        known[index] = false
      default: Issue.record("unexpected \(event)")
      }
    }
    for _ in 0..<3000 {
      switch random.next(10) {
      case 0..<3:
        held.append(Self.message(from: peers[random.next(3)], sent))
        sent += 1
      case 3..<8:
        let peer = random.next(3)
        truth[peer].toggle()
        held.append(try Self.reach(peers[peer], truth[peer], fresh: truth[peer]))
      default:
        held.publish(upTo: random.next(4), to: hub)
        while hub.deepestBuffer > 0, let event = await cursor.next() { read(event) }
      }
      #expect(held.count <= 2 * held.messages + peers.count)
    }
    held.publishAll(to: hub)
    hub.finish()
    while let event = await cursor.next() { read(event) }
    #expect(next == sent)
    #expect(known == truth)
  }
}
