import NearbySystem
import NearbyTransport
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// The processes a lab runs, and why (if) it is stopping them. Shared by the task that
/// watches signals and the one that runs the hosts.
final class LabControl: Sendable {
  enum StopReason: Sendable, Equatable {
    /// A host ended with a non-zero code: the lab's exit code.
    case failure(host: String, code: Int32)
    /// Every script or command finished well; services are stopped.
    case finished
    case timeout
    case signal(Int32)
    /// Something the lab needs failed (a process could not start).
    case internalError
  }

  private struct Running {
    var child: ChildProcess
    /// Signal its whole process group (hosts) or just it (`lan loopback`, which forwards).
    var group: Bool
  }

  private struct State {
    var running: [String: Running] = [:]
    var reason: StopReason?
    var stopStarted: ContinuousClock.Instant?
    var killed = false
  }

  private let state = Mutex(State())

  /// Why the lab stops, once it does.
  var reason: StopReason? { state.withLock { $0.reason } }
  var isStopping: Bool { reason != nil }

  /// Adds a process; when the lab is already stopping, it is terminated at once.
  func register(_ name: String, _ child: ChildProcess, group: Bool) {
    let stopping = state.withLock { state in
      state.running[name] = Running(child: child, group: group)
      return state.reason != nil
    }
    if stopping { child.terminate(SIGTERM, group: group) }
  }

  func exited(_ name: String) {
    state.withLock { $0.running[name] = nil }
  }

  /// The names of the processes still running.
  var runningNames: [String] { state.withLock { $0.running.keys.sorted() } }

  /// Starts stopping (SIGTERM to every process). The first reason is kept.
  /// - Returns: whether this call started the stop.
  @discardableResult
  func stop(_ reason: StopReason) -> Bool {
    let targets: [Running]? = state.withLock { state in
      guard state.reason == nil else { return nil }
      state.reason = reason
      state.stopStarted = .now
      return Array(state.running.values)
    }
    guard let targets else { return false }
    for target in targets { target.child.terminate(SIGTERM, group: target.group) }
    return true
  }

  /// SIGKILL for whatever still runs.
  func killAll() {
    let targets = state.withLock { state in
      state.killed = true
      return Array(state.running.values)
    }
    for target in targets { target.child.terminate(SIGKILL, group: target.group) }
  }

  /// Kills what still runs `grace` after the stop began (once).
  func killIfOverdue(grace: Duration) {
    let due = state.withLock { state in
      guard !state.killed, let started = state.stopStarted, ContinuousClock.now - started >= grace else { return false }
      return true
    }
    if due { killAll() }
  }
}
