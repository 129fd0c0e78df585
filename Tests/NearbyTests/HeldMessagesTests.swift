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

  static func peer(_ id: PeerID) throws -> Peer { Peer(id: id, name: try DisplayName(id == bob ? "bob" : "carol")) }

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
}
