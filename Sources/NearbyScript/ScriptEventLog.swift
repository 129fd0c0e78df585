import NearbyChat
import Synchronization

/// Every event a scripted chat has shown, in order, and which script line used each.
///
/// ``record(_:)`` is synchronous (a ``ChatOutput`` calls it), so an event is in the log
/// before the chat moves on. An expectation takes the first matching event nobody has used
/// yet, whether it arrived before the expectation or while it waits.
///
/// Bounded: beyond `limit` entries or `byteLimit` bytes of text, used ones are forgotten
/// first, then the oldest unused (a peer that floods us, with many messages or long ones,
/// cannot make the log grow without end).
public final class ScriptEventLog: Sendable {
  /// An event and the script line that used it.
  public struct Entry: Sendable {
    /// The event's position among all events recorded (0, 1, 2, ...).
    public var sequence: Int
    public var event: ScriptEvent
    public var usedBy: Int?
  }

  private struct Waiter {
    var expectation: ScriptExpectation
    var line: Int
    var continuation: CheckedContinuation<ScriptEvent?, Never>
  }

  private struct State {
    var entries: [Entry] = []
    /// What the entries hold (``ScriptEventLog/cost(of:)``).
    var bytes = 0
    var recorded = 0
    var forgottenUnused = 0
    var waiters: [(id: UInt64, waiter: Waiter)] = []
    var cancelled: Set<UInt64> = []
    var nextID: UInt64 = 0

    /// Marks the first unused match as used by `line` and returns it.
    mutating func take(_ expectation: ScriptExpectation, line: Int) -> ScriptEvent? {
      guard let index = entries.firstIndex(where: { $0.usedBy == nil && expectation.matches($0.event) }) else { return nil }
      entries[index].usedBy = line
      return entries[index].event
    }

    mutating func trim(to limit: Int, bytes byteLimit: Int) {
      guard entries.count > limit || bytes > byteLimit else { return }
      // Keep the newest few whatever they are (they show in failure messages).
      let recent = entries.suffix(ChatScriptFailure.recentCount)
      var older = entries.dropLast(ChatScriptFailure.recentCount).filter { $0.usedBy == nil }
      var kept = (older + recent).reduce(0) { $0 + ScriptEventLog.cost(of: $1.event) }
      // Down to half of either limit, so that trimming happens once in a while.
      var excess = max(0, older.count + recent.count - limit / 2)
      for entry in older.prefix(excess) { kept -= ScriptEventLog.cost(of: entry.event) }
      while excess < older.count, kept > byteLimit / 2 {
        kept -= ScriptEventLog.cost(of: older[older.startIndex + excess].event)
        excess += 1
      }
      excess = min(excess, older.count)
      if excess > 0 {
        forgottenUnused += excess
        older.removeFirst(excess)
      }
      entries = Array(older) + recent
      bytes = kept
    }
  }

  private let state = Mutex(State())
  private let limit: Int
  private let byteLimit: Int

  /// - Parameters:
  ///   - limit: the most entries kept (at least 100).
  ///   - byteLimit: the most bytes of text they hold (at least 64 KiB; the newest few are
  ///     kept whatever their size).
  public init(limit: Int = 10_000, byteLimit: Int = 64 << 20) {
    self.limit = max(limit, 100)
    self.byteLimit = max(byteLimit, 64 << 10)
  }

  /// What an event costs the log: its text and its line, and a little for the rest.
  static func cost(of event: ScriptEvent) -> Int { event.text.utf8.count + event.display.utf8.count + 64 }

  /// Adds an event; a waiting expectation it matches takes it.
  public func record(_ event: ScriptEvent) {
    let resumed: (CheckedContinuation<ScriptEvent?, Never>, ScriptEvent)? = state.withLock { state in
      state.entries.append(Entry(sequence: state.recorded, event: event))
      state.bytes += Self.cost(of: event)
      state.recorded += 1
      defer { state.trim(to: limit, bytes: byteLimit) }
      guard let position = state.waiters.firstIndex(where: { $0.waiter.expectation.matches(event) }) else { return nil }
      let waiter = state.waiters.remove(at: position).waiter
      state.entries[state.entries.count - 1].usedBy = waiter.line
      return (waiter.continuation, event)
    }
    if let (continuation, event) = resumed { continuation.resume(returning: event) }
  }

  /// How many events were recorded so far (the sequence number of the next one).
  public var count: Int { state.withLock { $0.recorded } }

  /// How many unused events were forgotten to keep the log bounded.
  public var forgottenUnused: Int { state.withLock { $0.forgottenUnused } }

  /// The entries kept whose sequence number is `start` or more.
  public func entries(from start: Int = 0) -> [Entry] {
    state.withLock { state in state.entries.filter { $0.sequence >= start } }
  }

  /// Uses the first unused event that matches, if there is one (no waiting).
  public func take(_ expectation: ScriptExpectation, line: Int) -> ScriptEvent? {
    state.withLock { $0.take(expectation, line: line) }
  }

  /// Marks an entry as used (by a command that expected it, like an error it caused).
  func markUsed(sequence: Int, by line: Int) {
    state.withLock { state in
      if let index = state.entries.firstIndex(where: { $0.sequence == sequence }) { state.entries[index].usedBy = line }
    }
  }

  /// Waits for a matching event (one already recorded and unused counts) until
  /// `expectation.timeout` passes on `clock`.
  /// - Returns: the event, or nil after the timeout (or on cancellation).
  public func expect<C: Clock>(_ expectation: ScriptExpectation, line: Int, clock: C) async -> ScriptEvent? where C.Duration == Duration {
    if let event = take(expectation, line: line) { return event }
    return await withTaskGroup(of: ScriptEvent?.self) { group in
      group.addTask { await self.wait(for: expectation, line: line) }
      group.addTask {
        try? await clock.sleep(for: expectation.timeout)
        return nil
      }
      var found = await group.next() ?? nil
      group.cancelAll()
      // The event may have arrived just as the time ran out: it was taken, so it counts.
      while let result = await group.next() {
        if found == nil { found = result }
      }
      return found
    }
  }

  /// Waits until a matching event is recorded (or one unused is there already).
  func wait(for expectation: ScriptExpectation, line: Int) async -> ScriptEvent? {
    let id = state.withLock { state in
      defer { state.nextID += 1 }
      return state.nextID
    }
    return await withTaskCancellationHandler {
      await withCheckedContinuation { (continuation: CheckedContinuation<ScriptEvent?, Never>) in
        let immediate: ScriptEvent?? = state.withLock { state in
          if state.cancelled.remove(id) != nil { return .some(nil) }
          if let event = state.take(expectation, line: line) { return .some(event) }
          state.waiters.append((id, Waiter(expectation: expectation, line: line, continuation: continuation)))
          return .none
        }
        if let immediate { continuation.resume(returning: immediate) }
      }
    } onCancel: {
      let continuation: CheckedContinuation<ScriptEvent?, Never>? = state.withLock { state in
        if let position = state.waiters.firstIndex(where: { $0.id == id }) {
          return state.waiters.remove(at: position).waiter.continuation
        }
        state.cancelled.insert(id)
        return nil
      }
      continuation?.resume(returning: nil)
    }
  }
}
