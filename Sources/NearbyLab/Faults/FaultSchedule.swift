import Synchronization

/// When each step of a lab's faults file is due: an `at` step that long after the hosts
/// started, a `when` step its delay after the first line of its host's output that matches.
/// Every step runs once.
///
/// The hosts' output readers call ``observe(host:line:)`` from their own threads; the lab
/// asks for ``due(at:)`` steps and runs them in file order.
final class FaultSchedule: Sendable {
  /// A step that is due, with the output line that triggered it (for `when` steps).
  struct Due: Sendable, Equatable {
    var step: FaultScript.Step
    var line: String?
  }

  private struct State {
    var start: ContinuousClock.Instant?
    /// The steps not run yet, in file order.
    var pending: [FaultScript.Step]
    /// For `when` steps that matched (by line number): when, and the line.
    var matched: [Int: (at: ContinuousClock.Instant, line: String)] = [:]
  }

  private let state: Mutex<State>

  init(_ steps: [FaultScript.Step]) { state = Mutex(State(pending: steps)) }

  /// The hosts started now: `at` steps count from here.
  func begin(at start: ContinuousClock.Instant) { state.withLock { $0.start = start } }

  /// Whether steps remain.
  var isFinished: Bool { state.withLock { $0.pending.isEmpty } }

  /// The line numbers of the steps that have not run.
  var pendingLines: [Int] { state.withLock { $0.pending.map(\.line) } }

  /// Whether a step that restarts `host` is still to come (a host a fault killed is not
  /// done then).
  func restartPending(_ host: String) -> Bool {
    state.withLock { $0.pending.contains { $0.action == .restart(host) } }
  }

  /// A line of `host`'s output: triggers the first `when` steps of that host it matches.
  func observe(host: String, line: String, at now: ContinuousClock.Instant = .now) {
    state.withLock { state in
      for step in state.pending where state.matched[step.line] == nil {
        guard case .output(host, let pattern, _) = step.trigger, pattern.matches(line) else { continue }
        state.matched[step.line] = (now, line)
      }
    }
  }

  /// Takes the steps due at `now` off the schedule, in file order.
  func due(at now: ContinuousClock.Instant) -> [Due] {
    state.withLock { state in
      guard let start = state.start else { return [] }
      var due: [Due] = []
      state.pending.removeAll { step in
        switch step.trigger {
        case .at(let offset):
          guard now >= start + offset else { return false }
          due.append(Due(step: step, line: nil))
        case .output(_, _, let delay):
          guard let matched = state.matched[step.line], now >= max(matched.at, start) + delay else { return false }
          due.append(Due(step: step, line: matched.line))
        }
        return true
      }
      return due
    }
  }
}
