/// A bounded memory of message identities `(sender, id)`: remembers the last `capacity`
/// ones, forgetting the oldest first. Relays drop a message they have seen (loops, two
/// paths); peers behind relays drop a second copy the same way.
package struct SeenMessages: Sendable {
  struct Key: Hashable, Sendable {
    let sender: PeerID
    let id: UInt64
  }

  package let capacity: Int
  private var members: Set<Key> = []
  private var order: [Key] = []
  private var next = 0

  package init(capacity: Int = 65_536) {
    precondition(capacity > 0)
    self.capacity = capacity
  }

  /// Records the message. - Returns: `true` if it is new, `false` if it was seen.
  package mutating func insert(sender: PeerID, id: UInt64) -> Bool {
    let key = Key(sender: sender, id: id)
    guard members.insert(key).inserted else { return false }
    if order.count < capacity {
      order.append(key)
    } else {
      members.remove(order[next])
      order[next] = key
      next = (next + 1) % capacity
    }
    return true
  }

  /// Whether the message is remembered.
  package func contains(sender: PeerID, id: UInt64) -> Bool { members.contains(Key(sender: sender, id: id)) }

  package var count: Int { members.count }
}
