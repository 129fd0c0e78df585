import NearbyCore
import Testing

/// The instances a browser resolves at once: a flood of DNS-SD instances takes a bounded
/// number of resolvers, the rest wait in order, and an instance that goes frees its place
/// for the longest waiting.
@Suite("Instance slots of the browser")
struct InstanceSlotsTests {
  @Test func beyondTheLimitInstancesWaitInOrderAndTakeFreedPlaces() {
    var slots = InstanceSlots<Int>(limit: 3, waitingLimit: 2)
    #expect((0..<3).map { slots.announced($0) } == [true, true, true])
    #expect(slots.announced(1) == false, "announced again: already resolving")
    #expect(slots.announced(3) == false && slots.announced(4) == false, "wait")
    #expect(slots.announced(5) == false && slots.turnedAway == 1, "beyond the waiting list: not remembered, counted")
    #expect(slots.withdrawn(1) == 3, "the longest waiting takes the place")
    #expect(slots.active == [0, 2, 3])
    #expect(slots.withdrawn(4) == nil, "a waiting one withdrawn: nothing starts")
    #expect(slots.waitingCount == 0)
    #expect(slots.withdrawn(0) == nil, "nobody waits")
    #expect(slots.announced(6) == true)
    #expect(slots.withdrawn(42) == nil, "unknown")
  }

  /// Instances left out are looked for again once nobody waits and there is room: not
  /// while anyone waits, nor while the slots are full, and once per crowding.
  @Test func afterInstancesWereLeftOutTheBrowserAsksAgainOnceThereIsRoom() {
    var slots = InstanceSlots<Int>(limit: 1, waitingLimit: 1)
    let started = [0, 1, 2].map { slots.announced($0) }
    #expect(started == [true, false, false])
    #expect(slots.turnedAway == 1 && !slots.shouldAskAgain, "one waits")
    let promoted = slots.withdrawn(0)
    #expect(promoted == 1)
    #expect(!slots.shouldAskAgain, "nobody waits, but the one slot is taken")
    let next = slots.withdrawn(1)
    #expect(next == nil)
    #expect(slots.shouldAskAgain)
    slots.askingAgain()
    #expect(slots.turnedAway == 0 && !slots.shouldAskAgain)
    let again = [2, 3, 4].map { slots.announced($0) }
    #expect(again == [true, false, false], "announced again: resolved; then one waits, one is left out")
    #expect(slots.turnedAway == 1)
    slots.reset()
    #expect(slots.turnedAway == 0 && !slots.shouldAskAgain, "browsing anew asks for everything anyway")
  }

  /// A flood that keeps withdrawing waiting instances and announcing new ones: the list
  /// stays within twice the waiting ones, and those that wait still get their turn in the
  /// order they came. (Each withdrawal searched and shifted the whole list before.)
  @Test func churnAmongTheWaitingKeepsTheListBoundedAndInOrder() {
    var slots = InstanceSlots<Int>(limit: 2, waitingLimit: 1000)
    for key in 0..<1002 { _ = slots.announced(key) }
    var waiting = Array(2..<1002)
    var random = SeededGenerator(seed: 7)
    var next = 1002
    for _ in 0..<100_000 {
      let index = Int.random(in: 0..<waiting.count, using: &random)
      let promoted = slots.withdrawn(waiting[index])
      #expect(promoted == nil)
      waiting.remove(at: index)
      let started = slots.announced(next)
      #expect(!started)
      waiting.append(next)
      next += 1
    }
    #expect(slots.waitingCount == 1000 && slots.turnedAway == 0)
    #expect(slots.waitingStorage <= 2 * 1000 + 65, "\(slots.waitingStorage) places for 1000 waiting")
    // The two resolving ones go, then each that takes a place: the longest waiting first.
    var promoted: [Int] = []
    var resolving = [0, 1]
    while let gone = resolving.popLast() {
      if let taken = slots.withdrawn(gone) {
        promoted.append(taken)
        resolving.append(taken)
      }
    }
    #expect(promoted == waiting)
    #expect(slots.waitingCount == 0 && slots.active.isEmpty && slots.waitingStorage == 0)
  }

  /// Random announcements and withdrawals against a model: never more than the limit
  /// resolving, every instance resolving or waiting while the lists have room, and the
  /// waiting served first come, first served.
  @Test(arguments: 0..<20) func randomRunsKeepTheBounds(seed: UInt64) {
    var random = SeededGenerator(seed: seed)
    var slots = InstanceSlots<Int>(limit: 8, waitingLimit: 8)
    var active: Set<Int> = []
    var waiting: [Int] = []
    for _ in 0..<2000 {
      let key = Int.random(in: 0..<40, using: &random)
      if Bool.random(using: &random) {
        let start = slots.announced(key)
        if active.contains(key) || waiting.contains(key) {
          #expect(!start)
        } else if active.count < 8 {
          #expect(start)
          active.insert(key)
        } else {
          #expect(!start)
          if waiting.count < 8 { waiting.append(key) }
        }
      } else {
        let next = slots.withdrawn(key)
        if let index = waiting.firstIndex(of: key) {
          waiting.remove(at: index)
          #expect(next == nil)
        } else if active.remove(key) != nil, !waiting.isEmpty {
          let first = waiting.removeFirst()
          #expect(next == first)
          active.insert(first)
        } else {
          #expect(next == nil)
        }
      }
      #expect(slots.active == active, "seed \(seed)")
      #expect(slots.waitingCount == waiting.count)
      #expect(slots.active.count <= 8)
      #expect(slots.waitingStorage <= 2 * slots.waitingCount + 65, "the list with its holes")
    }
  }
}
