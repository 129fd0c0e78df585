/// A first-in first-out queue of message ids (a ring buffer), used to remember which sent
/// messages still wait for their acknowledgement. Acknowledgements come in order on a
/// connection, so removing the oldest is O(1).
struct UInt64Queue: Sendable {
  private var storage: [UInt64] = []
  private var head = 0
  private(set) var count = 0

  var isEmpty: Bool { count == 0 }

  mutating func append(_ value: UInt64) {
    if count == storage.count {
      var grown = [UInt64]()
      grown.reserveCapacity(max(16, storage.count * 2))
      for index in 0..<count { grown.append(storage[(head + index) % storage.count]) }
      grown.append(contentsOf: repeatElement(0, count: max(16, storage.count * 2) - count))
      storage = grown
      head = 0
    }
    storage[(head + count) % storage.count] = value
    count += 1
  }

  /// Removes `value`: O(1) when it is the oldest, a linear search otherwise.
  /// - Returns: whether it was there.
  @discardableResult
  mutating func remove(_ value: UInt64) -> Bool {
    guard count > 0 else { return false }
    if storage[head] == value {
      head = (head + 1) % storage.count
      count -= 1
      if count == 0 { head = 0 }
      return true
    }
    for offset in 1..<count {
      let index = (head + offset) % storage.count
      if storage[index] == value {
        // Shift the older elements forward by one: order is kept.
        var position = offset
        while position > 0 {
          let to = (head + position) % storage.count
          let from = (head + position - 1) % storage.count
          storage[to] = storage[from]
          position -= 1
        }
        head = (head + 1) % storage.count
        count -= 1
        return true
      }
    }
    return false
  }

  /// Empties the queue, returning what it held, oldest first.
  mutating func removeAll() -> [UInt64] {
    var result = [UInt64]()
    result.reserveCapacity(count)
    for index in 0..<count { result.append(storage[(head + index) % storage.count]) }
    storage = []
    head = 0
    count = 0
    return result
  }
}
