import Synchronization

/// A clock that moves only when a test calls ``advance(by:)``, so timeouts test in
/// microseconds (after swift-async-algorithms' `ManualClock`).
final class ManualClock: Clock, Sendable {
  struct Instant: InstantProtocol, CustomStringConvertible {
    var offset: Duration
    func advanced(by duration: Duration) -> Instant { Instant(offset: offset + duration) }
    func duration(to other: Instant) -> Duration { other.offset - offset }
    static func < (lhs: Instant, rhs: Instant) -> Bool { lhs.offset < rhs.offset }
    var description: String { "t+\(offset)" }
  }

  private struct Sleeper {
    var id: UInt64
    var deadline: Instant
    var continuation: CheckedContinuation<Void, any Error>
  }

  private struct State {
    var now = Instant(offset: .zero)
    var sleepers: [Sleeper] = []
    var cancelled: Set<UInt64> = []
    var nextID: UInt64 = 0
  }

  private let state = Mutex(State())

  var now: Instant { state.withLock { $0.now } }
  var minimumResolution: Duration { .zero }

  /// How many tasks are sleeping on this clock now.
  var sleeperCount: Int { state.withLock { $0.sleepers.count } }

  func sleep(until deadline: Instant, tolerance: Duration? = nil) async throws {
    let id = state.withLock { state in
      defer { state.nextID += 1 }
      return state.nextID
    }
    try await withTaskCancellationHandler {
      try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
        let result: Result<Void, any Error>? = state.withLock { state in
          if state.cancelled.remove(id) != nil { return .failure(CancellationError()) }
          if deadline <= state.now { return .success(()) }
          state.sleepers.append(Sleeper(id: id, deadline: deadline, continuation: continuation))
          return nil
        }
        if let result { continuation.resume(with: result) }
      }
    } onCancel: {
      let continuation: CheckedContinuation<Void, any Error>? = state.withLock { state in
        if let index = state.sleepers.firstIndex(where: { $0.id == id }) { return state.sleepers.remove(at: index).continuation }
        state.cancelled.insert(id)
        return nil
      }
      continuation?.resume(throwing: CancellationError())
    }
  }

  /// Moves time forward and wakes every sleeper whose deadline has come.
  func advance(by duration: Duration) {
    let woken: [CheckedContinuation<Void, any Error>] = state.withLock { state in
      state.now = state.now.advanced(by: duration)
      let now = state.now
      let due = state.sleepers.filter { $0.deadline <= now }
      state.sleepers.removeAll { $0.deadline <= now }
      return due.map(\.continuation)
    }
    for continuation in woken { continuation.resume() }
  }

  /// Waits (in real time) until `count` tasks sleep on this clock. A liveness bound, not a
  /// timing assertion: with 5 s, six script tests failed together in full parallel runs on
  /// two cores, waiting for their runner tasks to start (probably Swift's two pool threads
  /// busy with other suites' work), and passed when run again alone.
  func waitForSleepers(_ count: Int = 1) async throws {
    let deadline = ContinuousClock.now + .seconds(30)
    while sleeperCount < count {
      guard ContinuousClock.now < deadline else { throw ClockWaitError(count: count) }
      try await Task.sleep(for: .milliseconds(1))
    }
  }

  struct ClockWaitError: Error, CustomStringConvertible {
    var count: Int
    var description: String { "nobody started sleeping (expected \(count) sleepers within 30 s)" }
  }
}
