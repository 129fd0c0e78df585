import NearbyCore
import Synchronization
import Testing

@testable import Nearby

/// The event hub's reading ends take events a batch at a time: a received message still
/// counts as taken (its claim settled, so its sender is told it was delivered) only when the
/// application has it, however many the cursor holds.
@Suite("Event cursors: batches without early acknowledgements")
struct EventCursorTests {
  static func claim(_ id: UInt64) -> MessageClaim {
    MessageClaim(taken: TakenMessage(connection: ConnectionID(1), origin: PeerID(high: 1, low: 1), id: id), bytes: 1)
  }

  static func publish(_ hub: EventHub, _ ids: Range<UInt64>) {
    hub.publish(ids.map { EventHub.Publication(element: .session(.status(.listening(port: UInt16($0)))), claim: claim($0)) })
  }

  static func settled(_ hub: EventHub) -> [UInt64] {
    var claims: [MessageClaim] = []
    hub.takeSettledClaims(into: &claims)
    return claims.map(\.taken.id)
  }

  /// A consumer on the session's I/O thread working through thousands of buffered events
  /// lets other work of that thread run now and then (reading, timers, other tasks).
  @Test func aConsumerWorkingThroughAFloodLetsOtherWorkOfItsThreadRun() async throws {
    let session = try NearbySession(configuration: SessionConfiguration(identity: .ephemeral(), name: DisplayName("flooded")))
    let cursor = EventCursor(hub: session.hub, loop: session.loop)
    // Enough that working through them takes longer than a slice (1 ms) on any machine.
    Self.publish(session.hub, 0..<20_000)
    final class Counter: Sendable { let value = Atomic<Int>(0) }
    let taken = Counter()
    let consumer = Task(executorPreference: session.executor) {
      for _ in 0..<20_000 {
        _ = await cursor.next()
        taken.value.add(1, ordering: .relaxed)
      }
    }
    // Queued on the same thread while the consumer runs (or before it starts).
    let probe = Task(executorPreference: session.executor) { taken.value.load(ordering: .relaxed) }
    let seenByProbe = await probe.value
    await consumer.value
    #expect(seenByProbe < 20_000, "the other task ran only after the consumer had taken all 20 000 events")
    #expect(taken.value.load(ordering: .relaxed) == 20_000)
  }

  @Test func aClaimIsSettledWhenItsEventIsHandedOutNotWhenItsBatchIsTaken() async {
    let hub = EventHub()
    let cursor = EventCursor(hub: hub)
    Self.publish(hub, 0..<100)
    _ = await cursor.next()
    #expect(Self.settled(hub) == [0], "one event taken, one claim settled (the cursor holds a batch)")
    for _ in 0..<69 { _ = await cursor.next() }
    #expect(Self.settled(hub) == Array(1..<70))
  }

  @Test func whatACursorHeldCountsAsTakenWhenItsIterationEnds() async {
    let hub = EventHub()
    var cursor: EventCursor? = EventCursor(hub: hub)
    Self.publish(hub, 0..<100)
    for _ in 0..<10 { _ = await cursor!.next() }
    #expect(Self.settled(hub).count == 10)
    cursor = nil
    #expect(Self.settled(hub) == Array(10..<100), "what the batch held and what the hub still buffered")
  }

  @Test func withTwoConsumersAClaimIsSettledOnceBothHaveTheEvent() async {
    let hub = EventHub()
    let first = EventCursor(hub: hub)
    let second = EventCursor(hub: hub)
    Self.publish(hub, 0..<10)
    for _ in 0..<10 { _ = await first.next() }
    #expect(Self.settled(hub).isEmpty, "the second consumer has taken nothing yet")
    for _ in 0..<4 { _ = await second.next() }
    #expect(Self.settled(hub) == [0, 1, 2, 3])
  }

  @Test func eventsComeInOrderAcrossBatchesAndWaits() async {
    let hub = EventHub()
    let cursor = EventCursor(hub: hub)
    Self.publish(hub, 0..<150)
    var seen: [UInt16] = []
    for _ in 0..<150 {
      if case .session(.status(.listening(let port))) = await cursor.next() { seen.append(port) }
    }
    let waiting = Task { await cursor.next() }
    try? await Task.sleep(for: .milliseconds(20))
    Self.publish(hub, 150..<151)
    if case .session(.status(.listening(let port))) = await waiting.value { seen.append(port) }
    #expect(seen == Array(0..<151))
    hub.finish()
    #expect(await cursor.next() == nil)
  }
}
