import NearbySystem
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
    /// Processes a fault killed (their end is not a failure).
    var killedByFault: Set<pid_t> = []
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

  /// A process ended: forgotten, unless `name` runs a newer one (`pid` tells them apart).
  func exited(_ name: String, pid: pid_t? = nil) {
    state.withLock { state in
      if pid == nil || state.running[name]?.child.pid == pid { state.running[name] = nil }
    }
  }

  /// The process `name` runs now.
  func process(_ name: String) -> ChildProcess? { state.withLock { $0.running[name]?.child } }

  /// Sends `signal` to the process (group) of `name`, for a fault; SIGKILL marks it as
  /// killed by the lab. - Returns: whether `name` was running.
  @discardableResult
  func signal(_ name: String, _ signal: Int32) -> Bool {
    guard
      let target = state.withLock({ state -> Running? in
        guard let running = state.running[name] else { return nil }
        if signal == SIGKILL { state.killedByFault.insert(running.child.pid) }
        return running
      })
    else { return false }
    target.child.terminate(signal, group: target.group)
    return true
  }

  /// Whether a fault killed the process `pid`.
  func wasKilledByFault(_ pid: pid_t) -> Bool { state.withLock { $0.killedByFault.contains(pid) } }

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
    for target in targets {
      target.child.terminate(SIGTERM, group: target.group)
      // A process a fault paused must run to see the SIGTERM.
      target.child.terminate(SIGCONT, group: target.group)
    }
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
