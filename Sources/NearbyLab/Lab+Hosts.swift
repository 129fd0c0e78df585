import NearbyScript
import NearbySystem

#if canImport(Glibc)
  import Glibc
#endif

extension Lab {
  enum Launcher {
    /// Start commands here (inside `nearby-lan loopback`).
    case direct
    /// Inside host HOST of LAN `id`.
    case lan(LANHarness, id: String)
  }

  private enum HostEvent: Sendable {
    case exited(String, pid: Int32, code: Int32)
    case tick
    /// Steps of the faults file that are due.
    case faults([FaultSchedule.Due])
  }

  /// Starts every host's command, streams its output, runs the faults file, waits, and
  /// stops the rest at the first failure, when the scripts are done, at the timeout, or on a
  /// signal.
  func runHosts(_ control: LabControl, launcher: Launcher) async -> Int32 {
    guard let stateRoot = LabFiles.makeTemporaryDirectory() else {
      errors.line("nearby lab: cannot create a temporary directory: \(String(cString: strerror(errno)))")
      return 1
    }
    defer { LabFiles.removeTree(stateRoot) }
    let schedule = FaultSchedule(loadFaults()?.steps ?? [])
    let hosts = LabHosts(lab: self, control: control, launcher: launcher, stateRoot: stateRoot, schedule: schedule)
    var children: [(String, ChildProcess)] = []
    for host in plan.hosts {
      if host.role == .idle {
        say("\(host.name) runs nothing (it is part of the network only)")
        continue
      }
      if let child = hosts.start(host) { children.append((host.name, child)) }
      if control.isStopping { break }
    }
    say("running " + hosts.started.map { "\($0.name) (\(describe($0.role)))" }.joined(separator: ", "))
    let began = ContinuousClock.now
    schedule.begin(at: began)
    await withTaskGroup(of: HostEvent.self) { group in
      for (name, child) in children { group.addTask { .exited(name, pid: child.pid, code: await child.wait()) } }
      group.addTask { await Self.tick() }
      if !schedule.isFinished { group.addTask { await Self.nextFaults(schedule) } }
      while hosts.live > 0 || (!control.isStopping && !hosts.unfinished.isEmpty), let event = await group.next() {
        switch event {
        case .exited(let name, let pid, let code):
          hosts.exited()
          control.exited(name, pid: pid)
          hostExited(name, pid: pid, code: code, hosts: hosts)
        case .tick:
          if !control.isStopping && ContinuousClock.now - began >= plan.timeout {
            say("timed out after \(ScriptDuration.elapsed(plan.timeout)); stopping \(control.runningNames.joined(separator: ", "))")
            control.stop(.timeout)
          }
          control.killIfOverdue(grace: Self.killGrace)
          group.addTask { await Self.tick() }
        case .faults(let due):
          for step in due where !control.isStopping {
            if let restarted = await runFault(step, began: began, hosts: hosts, launcher: launcher) {
              let name = step.step.action.hosts[0]
              group.addTask { .exited(name, pid: restarted.pid, code: await restarted.wait()) }
            }
          }
          if !schedule.isFinished && !control.isStopping { group.addTask { await Self.nextFaults(schedule) } }
        }
      }
      group.cancelAll()
    }
    // Show everything the hosts printed before the verdict (a process that inherited a
    // pipe could keep it open: do not wait for it long).
    let drained = ContinuousClock.now + .seconds(2)
    for pipe in hosts.pipes { await pipe.waitUntilFinished(deadline: drained) }
    let notRun = schedule.pendingLines
    if !notRun.isEmpty {
      say(
        "\(notRun.count == 1 ? "a fault" : "\(notRun.count) faults") did not run before the end (faults line \(notRun.map(String.init).joined(separator: ", ")))"
      )
    }
    let code = exitCode(control)
    let elapsed = ContinuousClock.now - began
    if code == 0 {
      say("passed: every host completed (\(ScriptDuration.elapsed(elapsed)))")
    } else if case .failure(let host, let failed) = control.reason {
      say("failed: \(host) exited with \(failed) (\(ScriptDuration.elapsed(elapsed)))")
    } else if case .signal(let signal) = control.reason {
      say("stopped by \(signal == SIGINT ? "SIGINT" : "SIGTERM") (\(ScriptDuration.elapsed(elapsed)))")
    } else if control.reason == .timeout {
      say("failed: timed out after \(ScriptDuration.elapsed(plan.timeout))")
    }
    return code
  }

  /// What a host's process ending means: a failure, a host done, or the end of a process a
  /// fault killed or replaced.
  private func hostExited(_ name: String, pid: Int32, code: Int32, hosts: LabHosts) {
    let host = hosts.started.first { $0.name == name }!
    let current = hosts.control.process(name)
    if current != nil && current?.pid != pid {
      say("\(name): its previous process ended (exit \(code))")
      return
    }
    if hosts.control.isStopping {
      say("\(name) stopped (exit \(code))")
      return
    }
    if hosts.control.wasKilledByFault(pid) {
      guard host.runsToCompletion, !hosts.schedule.restartPending(name) else {
        say("\(name) is down (exit \(code)) until a restart")
        return
      }
      say("\(name) is down (exit \(code)); no restart follows, so it is done")
      hosts.finished.insert(name)
    } else if code != 0 {
      say("\(name) failed with exit code \(code); stopping \(hosts.control.runningNames.joined(separator: ", "))")
      hosts.control.stop(.failure(host: name, code: code))
      return
    } else {
      say("\(name) \(host.runsToCompletion ? "completed" : "ended") (exit 0)")
      if host.runsToCompletion { hosts.finished.insert(name) }
    }
    if hosts.unfinished.isEmpty && hosts.live > 0 && hosts.started.contains(where: \.runsToCompletion) {
      say("every script is done; stopping \(hosts.control.runningNames.joined(separator: ", "))")
      hosts.control.stop(.finished)
    }
  }

  private static func tick() async -> HostEvent {
    try? await Task.sleep(for: .milliseconds(100))
    return .tick
  }

  /// Waits until steps of the faults file are due (checked every 20 ms).
  private static func nextFaults(_ schedule: FaultSchedule) async -> HostEvent {
    while !Task.isCancelled {
      let due = schedule.due(at: .now)
      if !due.isEmpty { return .faults(due) }
      try? await Task.sleep(for: .milliseconds(20))
    }
    return .faults([])
  }

  private func describe(_ role: LabPlan.Role) -> String {
    switch role {
    case .script(let path): "script " + (path.split(separator: "/").last.map(String.init) ?? path)
    case .service: "service"
    case .command(let arguments): arguments.first.map { "command " + ($0.split(separator: "/").last.map(String.init) ?? $0) } ?? "command"
    case .idle: "nothing"
    }
  }
}
