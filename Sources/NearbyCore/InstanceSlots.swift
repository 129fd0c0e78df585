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
  private var waiting: [Key] = []
  private var waitingKeys: Set<Key> = []
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
    if active.contains(key) || waitingKeys.contains(key) { return false }
    if active.count < limit {
      active.insert(key)
      return true
    }
    if waiting.count < waitingLimit {
      waiting.append(key)
      waitingKeys.insert(key)
    } else {
      turnedAway += 1
    }
    return false
  }

  /// An instance was withdrawn (or resolving it was given up). - Returns: a waiting instance
  /// to resolve now, in its place.
  package mutating func withdrawn(_ key: Key) -> Key? {
    if waitingKeys.remove(key) != nil {
      waiting.removeAll { $0 == key }
      return nil
    }
    guard active.remove(key) != nil, !waiting.isEmpty else { return nil }
    let next = waiting.removeFirst()
    waitingKeys.remove(next)
    active.insert(next)
    return next
  }

  /// How many instances wait.
  package var waitingCount: Int { waiting.count }

  /// Whether the browser should ask the daemon for every instance again: some were left out
  /// (``turnedAway``), and now nobody waits and there is room. DNS-SD announces an instance
  /// once, so without asking, one left out during a flood (a real peer among thousands of
  /// forged instances) stayed hidden after the flood ended, until browsing restarted.
  package var shouldAskAgain: Bool { turnedAway > 0 && waiting.isEmpty && active.count < limit }

  /// The browser asks again: what is left out from now on is counted afresh.
  package mutating func askingAgain() { turnedAway = 0 }

  /// Forgets everything (browsing starts again).
  package mutating func reset() {
    active = []
    waiting = []
    waitingKeys = []
    turnedAway = 0
  }
}
