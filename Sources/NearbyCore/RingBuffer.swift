/// A first-in first-out queue in one growable array (a ring): appending and removing the
/// oldest element are O(1), and so is reading by position. Used for the messages waiting for
/// their acknowledgement on a connection (acknowledgements come in order), the delivery
/// ledger, and the events waiting for a subscriber. Inlinable: used from other modules, it
/// is specialized there instead of looking up type metadata at every call.
package struct RingBuffer<Element>: Sendable where Element: Sendable {
  @usableFromInline var storage: [Element?] = []
  @usableFromInline var head = 0
  @usableFromInline package internal(set) var count = 0

  @inlinable package init() {}

  @inlinable package var isEmpty: Bool { count == 0 }

  /// The oldest element.
  @inlinable package var first: Element? { count == 0 ? nil : storage[head] }

  /// The element `offset` places after the oldest (0: the oldest).
  @inlinable package subscript(offset: Int) -> Element {
    get {
      precondition(offset >= 0 && offset < count, "RingBuffer index \(offset) out of 0..<\(count)")
      return storage[(head + offset) % storage.count]!
    }
    set {
      precondition(offset >= 0 && offset < count, "RingBuffer index \(offset) out of 0..<\(count)")
      storage[(head + offset) % storage.count] = newValue
    }
    // In place: a get and a set copied an element with references out and back (retaining
    // and releasing each), once per answered message in the delivery ledger.
    _modify {
      precondition(offset >= 0 && offset < count, "RingBuffer index \(offset) out of 0..<\(count)")
      yield &storage[(head + offset) % storage.count]!
    }
  }

  @inlinable package mutating func append(_ element: consuming Element) {
    if count == storage.count { grow() }
    storage[(head + count) % storage.count] = element
    count += 1
  }

  /// What `part` reads of the oldest element, read where it lies (``first`` copies the
  /// whole element: a retain and a release of each of its references). `mutating`: an
  /// in-place access, as the subscript's `_modify` is.
  @inlinable package mutating func first<T>(_ part: (inout Element) -> T) -> T? {
    guard count > 0 else { return nil }
    return part(&storage[head]!)
  }

  /// Exchanges the elements at two positions (0: the oldest).
  @inlinable package mutating func swapAt(_ i: Int, _ j: Int) {
    precondition(i >= 0 && i < count && j >= 0 && j < count, "RingBuffer indexes \(i), \(j) out of 0..<\(count)")
    storage.swapAt((head + i) % storage.count, (head + j) % storage.count)
  }

  /// Removes and returns the oldest element, moved out of the storage.
  @inlinable @discardableResult
  package mutating func popFirst() -> Element? {
    guard count > 0 else { return nil }
    let element = storage[head].take()
    head = head + 1 == storage.count ? 0 : head + 1
    count -= 1
    if count == 0 { head = 0 }
    return element
  }

  /// Empties the queue, returning what it held, oldest first.
  @inlinable package mutating func removeAll() -> [Element] {
    var result: [Element] = []
    result.reserveCapacity(count)
    while let element = popFirst() { result.append(element) }
    storage = []
    return result
  }

  /// Gives back memory after a burst: shrinks the storage when it is mostly empty.
  @inlinable package mutating func shrinkIfSparse() {
    guard storage.count > 64, count * 4 < storage.count else { return }
    let kept = removeAll()
    storage.reserveCapacity(max(16, kept.count * 2))
    for element in kept { append(element) }
  }

  @inlinable mutating func grow() {
    var grown = [Element?](repeating: nil, count: max(16, storage.count * 2))
    for index in 0..<count { grown[index] = storage[(head + index) % storage.count] }
    storage = grown
    head = 0
  }
}

extension RingBuffer where Element: Equatable {
  /// Removes `value`: O(1) when it is the oldest, a linear search otherwise (order is kept).
  /// - Returns: whether it was there.
  @inlinable @discardableResult
  package mutating func remove(_ value: Element) -> Bool {
    guard count > 0 else { return false }
    if storage[head] == value {
      popFirst()
      return true
    }
    for offset in 1..<count where self[offset] == value {
      // Shift the older elements forward by one.
      var position = offset
      while position > 0 {
        self[position] = self[position - 1]
        position -= 1
      }
      popFirst()
      return true
    }
    return false
  }
}
