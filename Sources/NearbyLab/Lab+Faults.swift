import NearbySystem

#if canImport(Glibc)
  import Glibc
#endif

extension Lab {
  /// The faults file of the scripts directory, if there is one (checked before the lab
  /// starts: ``scriptErrors(_:)``).
  func loadFaults() -> FaultScript? {
    guard let path = plan.faults, let text = LabFiles.read(path) else { return nil }
    return try? FaultScript.parse(text)
  }

  /// Runs a due step of the faults file and reports it (`lab | 12.3s partition alice bob`).
  /// Network faults go to the harness; a failed one stops the lab (exit 1): the scenario
  /// cannot go on as written.
  /// - Returns: the new process of a host the step restarted.
  func runFault(_ due: FaultSchedule.Due, began: ContinuousClock.Instant, hosts: LabHosts, launcher: Launcher) async -> ChildProcess? {
    let action = due.step.action
    let time = Self.tenths(ContinuousClock.now - began)
    var report = "\(time) \(action)"
    if let line = due.line, case .output(let host, _, let delay) = due.step.trigger {
      let shown = line.count > 80 ? line.prefix(77) + "..." : Substring(line)
      report += " (\(delay > .zero ? "\(Self.tenths(delay)) after " : "")\(host) printed: \(shown))"
    }
    say(report)
    if action.isProcessFault { return await processFault(action, hosts: hosts) }
    guard case .lan(let harness, let id) = launcher else {
      say("\(time) \(action) failed: network faults need hosts of their own (not --loopback)")
      hosts.control.stop(.internalError)
      return nil
    }
    do throws(LANError) {
      try await harness.inject(action, into: id)
    } catch {
      say("\(time) \(action) failed: \(error.message); stopping \(hosts.control.runningNames.joined(separator: ", "))")
      hosts.control.stop(.internalError)
    }
    return nil
  }

  private func processFault(_ action: FaultAction, hosts: LabHosts) async -> ChildProcess? {
    let control = hosts.control
    switch action {
    case .pause(let name):
      if !control.signal(name, SIGSTOP) { say("\(name) is not running: nothing to pause") }
    case .resume(let name):
      if !control.signal(name, SIGCONT) { say("\(name) is not running: nothing to resume") }
    case .kill(let name):
      if !control.signal(name, SIGKILL) { say("\(name) is not running: nothing to kill") }
    case .restart(let name):
      guard let host = plan.hosts.first(where: { $0.name == name }) else { return nil }
      if let old = control.process(name) {
        control.signal(name, SIGKILL)
        // The new process gets the same state directory: the old one must be gone first.
        _ = await ProcessTable.waitUntil(.seconds(5)) { !ProcessTable.isAlive(old.pid) }
      }
      hosts.finished.remove(name)
      return hosts.start(host)
    default: break
    }
    return nil
  }

  /// `12.3s`.
  static func tenths(_ duration: Duration) -> String {
    let tenths = duration.components.seconds * 10 + duration.components.attoseconds / 100_000_000_000_000_000
    return "\(tenths / 10).\(tenths % 10)s"
  }
}
