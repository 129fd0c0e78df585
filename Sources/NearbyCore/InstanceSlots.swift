/// Which DNS-SD instances a browser resolves at once. Anyone on the LAN can publish any
/// number of instances, and each resolved one holds a resolve and two address queries in the
/// DNS-SD daemon (with Avahi's compatibility library, connections to the system bus, which
/// allows a few hundred): at most ``limit`` are resolved, the others wait in the order they
/// came (at most ``waitingLimit``; beyond, the newest are not remembered) and take the place
/// of one that goes. No I/O: the browser asks it, and starts and stops resolvers as it says.
package struct InstanceSlots<Key: Hashable & Sendable>: Sendable {
  package let limit: Int
  package let waitingLimit: Int
  package private(set) var active: Set<Key> = []
  /// The waiting instances in the order they came, from ``waitingHead``, with holes where one
  /// was withdrawn while waiting; ``waitingIndex`` gives each one's place. (An array searched
  /// and shifted on every withdrawal cost O(``waitingLimit``) each: 4 096 comparisons of
  /// instance names for every forged instance a flood withdrew while it waited.)
  private var waitingOrder: [Key?] = []
  private var waitingHead = 0
  private var waitingIndex: [Key: Int] = [:]
  /// Instances not remembered because the waiting list was full (since browsing began, or
  /// the browser last asked again).
  package private(set) var turnedAway = 0

  package init(limit: Int = 512, waitingLimit: Int = 4096) {
    self.limit = limit
    self.waitingLimit = waitingLimit
  }

  /// An instance was announced. - Returns: whether to resolve it now (otherwise it waits,
  /// or is not remembered).
  package mutating func announced(_ key: Key) -> Bool {
    if active.contains(key) || waitingIndex[key] != nil { return false }
    if active.count < limit {
      active.insert(key)
      return true
    }
    if waitingIndex.count < waitingLimit {
      waitingIndex[key] = waitingOrder.count
      waitingOrder.append(key)
    } else {
      turnedAway += 1
    }
    return false
  }

  /// An instance was withdrawn (or resolving it was given up). - Returns: a waiting instance
  /// to resolve now, in its place.
  package mutating func withdrawn(_ key: Key) -> Key? {
    if let index = waitingIndex.removeValue(forKey: key) {
      waitingOrder[index] = nil
      tidyWaiting()
      return nil
    }
    guard active.remove(key) != nil, let next = takeFirstWaiting() else { return nil }
    active.insert(next)
    return next
  }

  /// The longest waiting instance, taken off the list.
  private mutating func takeFirstWaiting() -> Key? {
    while waitingHead < waitingOrder.count {
      let slot = waitingOrder[waitingHead]
      waitingOrder[waitingHead] = nil
      waitingHead += 1
      if let key = slot {
        waitingIndex[key] = nil
        tidyWaiting()
        return key
      }
    }
    return nil
  }

  /// Keeps the list within twice the waiting instances (and a little): empty, it starts
  /// again at the front; with more holes and passed places than instances, the instances move
  /// to a new list, in order.
  private mutating func tidyWaiting() {
    if waitingIndex.isEmpty {
      waitingOrder.removeAll(keepingCapacity: waitingOrder.capacity <= 2 * waitingLimit)
      waitingHead = 0
    } else if waitingOrder.count > 2 * waitingIndex.count + 64 {
      let kept = waitingOrder[waitingHead...].compactMap { $0 }
      waitingOrder = kept
      waitingHead = 0
      for (index, key) in kept.enumerated() { waitingIndex[key] = index }
    }
  }

  /// Places in the waiting list, holes included (tests: it stays bounded).
  package var waitingStorage: Int { waitingOrder.count }

  /// How many instances wait.
  package var waitingCount: Int { waitingIndex.count }

  /// Whether the browser should ask the daemon for every instance again: some were left out
  /// (``turnedAway``), and now nobody waits and there is room. DNS-SD announces an instance
  /// once, so without asking, one left out during a flood (a real peer among thousands of
  /// forged instances) stayed hidden after the flood ended, until browsing restarted.
  package var shouldAskAgain: Bool { turnedAway > 0 && waitingIndex.isEmpty && active.count < limit }

  /// The browser asks again: what is left out from now on is counted afresh.
  package mutating func askingAgain() { turnedAway = 0 }

  /// Forgets everything (browsing starts again).
  package mutating func reset() {
    active = []
    waitingOrder = []
    waitingHead = 0
    waitingIndex = [:]
    turnedAway = 0
  }
}
