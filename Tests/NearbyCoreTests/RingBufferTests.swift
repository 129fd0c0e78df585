import NearbyCore
import Testing

/// The queue under the resend window, the delivery ledger and the event buffers, against an
/// array doing the same operations: every wrap-around position, growth and shrinking.
@Suite("RingBuffer")
struct RingBufferTests {
  /// Elements with a reference inside, as the resend window's are: a copy left behind in
  /// the storage would keep its object alive.
  final class Token: Sendable {
    let value: Int
    init(_ value: Int) { self.value = value }
  }

  @Test(arguments: 0..<24 as Range<UInt64>)
  func behavesAsAnArrayUsedAsAQueue(seed: UInt64) {
    var generator = SeededGenerator(seed: seed &+ 1)
    var ring = RingBuffer<Int>()
    var model: [Int] = []
    var next = 0
    for _ in 0..<2000 {
      switch Int.random(in: 0..<10, using: &generator) {
      case 0..<5:
        ring.append(next)
        model.append(next)
        next += 1
      case 5..<8:
        #expect(ring.popFirst() == model.first)
        if !model.isEmpty { model.removeFirst() }
      case 8:
        if let value = model.randomElement(using: &generator) {
          let removed = ring.remove(value)
          #expect(removed)
          model.removeAll { $0 == value }
        }
        let removedAbsent = ring.remove(-1)
        #expect(!removedAbsent)
      default:
        ring.shrinkIfSparse()
      }
      #expect(ring.count == model.count)
      #expect(ring.first == model.first)
      #expect(ring.first({ $0 * 2 }) == model.first.map { $0 * 2 })
      for offset in model.indices where offset % 7 == 0 { #expect(ring[offset] == model[offset]) }
    }
    #expect(ring.removeAll() == model)
    #expect(ring.isEmpty && ring.popFirst() == nil && ring.first({ $0 }) == nil)
  }

  @Test(arguments: 0..<17)
  func poppedElementsLeaveNothingBehind(headStart: Int) {
    var ring = RingBuffer<Token>()
    // Move the head around the ring first, so the elements wrap at every position.
    for index in 0..<headStart { ring.append(Token(index)) }
    for _ in 0..<headStart { ring.popFirst() }
    weak var watched: Token?
    do {
      let token = Token(99)
      watched = token
      ring.append(token)
      for index in 0..<20 { ring.append(Token(index)) }
    }
    #expect(ring.first({ $0.value }) == 99)
    #expect(watched != nil)
    #expect(ring.popFirst()?.value == 99)
    #expect(watched == nil, "the storage still held the popped element")
    #expect(ring.count == 20 && ring.first({ $0.value }) == 0)
  }
}
