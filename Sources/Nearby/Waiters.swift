/// Continuations of callers waiting for something of the session, by key, each with a
/// token so that a cancelled caller can take its own continuation out. The session resumes
/// each exactly once: when what it waits for happens, when it is cancelled, or at shutdown.
struct Waiters<Key: Hashable & Sendable, Value: Sendable>: Sendable {
  private var entries: [(key: Key, token: UInt64, continuation: CheckedContinuation<Value, Never>)] = []

  var isEmpty: Bool { entries.isEmpty }
  /// How many wait.
  var count: Int { entries.count }

  mutating func add(_ continuation: CheckedContinuation<Value, Never>, key: Key, token: UInt64) {
    entries.append((key, token, continuation))
  }

  /// Takes out the continuations waiting for `key`, oldest first.
  mutating func remove(key: Key) -> [CheckedContinuation<Value, Never>] {
    removeAll { $0 == key }
  }

  /// Takes out the continuations whose key matches, oldest first.
  mutating func removeAll(where matches: (Key) -> Bool) -> [CheckedContinuation<Value, Never>] {
    guard !entries.isEmpty else { return [] }
    var taken: [CheckedContinuation<Value, Never>] = []
    entries.removeAll { entry in
      guard matches(entry.key) else { return false }
      taken.append(entry.continuation)
      return true
    }
    return taken
  }

  /// Takes out the continuation of a cancelled caller (nil if it was already resumed).
  mutating func cancel(token: UInt64) -> CheckedContinuation<Value, Never>? {
    guard let index = entries.firstIndex(where: { $0.token == token }) else { return nil }
    return entries.remove(at: index).continuation
  }

  /// Every key waited for.
  var keys: [Key] { entries.map(\.key) }
}
