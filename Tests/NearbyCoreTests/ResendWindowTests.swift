import NearbyCore
import Testing

/// A session's window of unacknowledged messages: acknowledgements in any order, serial ids
/// that wrap, and what a resumed session sends again.
@Suite("Resend window")
struct ResendWindowTests {
  static func message(_ id: UInt64, size: Int) -> Frame.Message {
    Frame.Message(id: id, sender: PeerID(high: 1, low: 1), timestamp: 0, recipients: [], body: [UInt8](repeating: 1, count: size))
  }

  /// Random appends (some of older ids), removals of any waiting or unknown id, removals
  /// through an id and emptying, from a start just below the wrap: the window answers as a
  /// sorted list does.
  @Test(arguments: 0..<40)
  func behavesAsAPlainList(seed: Int) {
    var random = SeededGenerator(seed: UInt64(seed) &+ 77)
    var window = ResendWindow()
    window.keepsMessages = seed % 4 != 0
    var list: [Frame.Message] = []
    let start = UInt64.max - 40 + random.next() % 20
    var next = start
    for step in 0..<600 {
      switch random.next() % 10 {
      case 0..<4:
        // Mostly the next id; now and then an older one again (a relay's window, when a
        // recipient is found behind it), which goes in its place.
        var id = next
        if random.next() % 5 == 0, next &- start > 2 {
          let older = start &+ random.next() % (next &- start)
          if !list.contains(where: { $0.id == older }) { id = older }
        }
        if id == next { next &+= 1 }
        let message = Self.message(id, size: Int(random.next() % 100))
        window.append(message)
        list.append(message)
        list.sort { $0.id &- start < $1.id &- start }
      case 4..<8:
        let id = list.isEmpty || random.next() % 4 == 0 ? next &- random.next() % 80 : list[Int(random.next() % UInt64(list.count))].id
        let expected = list.contains { $0.id == id }
        list.removeAll { $0.id == id }
        guard window.remove(id) == expected else {
          Issue.record("step \(step): remove(\(id)) answered \(!expected)")
          return
        }
      case 8:
        let through = next &- random.next() % 30
        let expected = list.filter { SerialNumber.isAtOrBefore($0.id, through) }.map(\.id)
        list.removeAll { SerialNumber.isAtOrBefore($0.id, through) }
        guard window.removeThrough(through) == expected else {
          Issue.record("step \(step): removeThrough(\(through))")
          return
        }
      default:
        if random.next() % 8 == 0 {
          guard window.removeAll() == list.map(\.id) else {
            Issue.record("step \(step): removeAll")
            return
          }
          list = []
        }
      }
      let after = list.isEmpty || random.next() % 3 == 0 ? nil : list[Int(random.next() % UInt64(list.count))].id
      let kept = window.keepsMessages ? list.filter { after == nil || !SerialNumber.isAtOrBefore($0.id, after!) } : []
      let cost = window.keepsMessages ? list.reduce(0) { $0 + ResendWindow.cost(of: $1) } : 0
      guard window.count == list.count, window.isEmpty == list.isEmpty, window.messages(after: after) == kept, window.byteCount == cost else {
        Issue.record("step \(step): \(window.count) waiting against \(list.count), bytes \(window.byteCount) against \(cost)")
        return
      }
    }
  }

  /// The newest acknowledged first, all of a large window: each found without a pass over it.
  @Test func acknowledgementsNewestFirstEmptyTheWindow() {
    var window = ResendWindow()
    window.keepsMessages = true
    for id in UInt64(0)..<100_000 { window.append(Self.message(id, size: 8)) }
    for id in (UInt64(0)..<100_000).reversed() where !window.remove(id) {
      Issue.record("\(id) was not found")
      return
    }
    #expect(window.isEmpty && window.byteCount == 0)
    let removedAgain = window.remove(5)
    #expect(!removedAgain)
  }

  /// The first message never acknowledged and every later one acknowledged: what went does
  /// not pile up behind it (one entry per message sent, for as long as the session lived).
  @Test func acknowledgementsBehindAnOldOneDoNotPileUp() {
    var window = ResendWindow()
    window.append(Self.message(0, size: 8))
    for id in UInt64(1)..<100_000 {
      window.append(Self.message(id, size: 8))
      guard window.remove(id) else {
        Issue.record("\(id) was not found")
        return
      }
    }
    #expect(window.count == 1)
    #expect(window.storedEntries <= 3 * window.count + 64, "\(window.storedEntries) entries kept for 1 waiting")
    let removedFirst = window.remove(0)
    #expect(removedFirst && window.isEmpty)
  }
}
