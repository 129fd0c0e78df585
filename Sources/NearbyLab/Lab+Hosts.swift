import NearbyScript
import NearbySystem
import NearbyTransport

#if canImport(Glibc)
  import Glibc
#endif

extension Lab {
  enum Launcher {
    /// Start commands here (inside `lan loopback`).
    case direct
    /// Inside host HOST of LAN `id`.
    case lan(LANHarness, id: String)
  }

  private enum HostEvent: Sendable {
    case exited(String, Int32)
    case tick
  }

  /// Starts every host's command, streams its output, waits, and stops the rest at the
  /// first failure, when the scripts are done, at the timeout, or on a signal.
  func runHosts(_ control: LabControl, launcher: Launcher) async -> Int32 {
    guard let stateRoot = LabFiles.makeTemporaryDirectory() else {
      errors.line("nearby lab: cannot create a temporary directory: \(String(cString: strerror(errno)))")
      return 1
    }
    defer { LabFiles.removeTree(stateRoot) }
    let width = max(3, plan.hosts.map(\.name.count).max() ?? 0)
    var pipes: [PrefixedPipe] = []
    var started: [LabPlan.Host] = []
    var children: [String: ChildProcess] = [:]
    let nearbyDirectory = String(executable[..<(executable.lastIndex(of: "/") ?? executable.startIndex)])
    hosts: for host in plan.hosts {
      let stateDirectory = stateRoot + "/" + host.name
      guard let command = host.arguments(nearby: executable, stateDirectory: stateDirectory) else {
        say("\(host.name) runs nothing (it is part of the network only)")
        continue
      }
      let variables = [
        "NEARBY_NAME": host.name, "NEARBY_STATE_DIR": stateDirectory, "NEARBY_LAB_HOST": host.name,
        "PATH": nearbyDirectory + ":" + (environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"),
      ]
      let argv: [String]
      var childEnvironment: [String: String]?
      switch launcher {
      case .direct:
        argv = command
        childEnvironment = environment.merging(variables) { $1 }
        childEnvironment?["NEARBY_LAB_INNER"] = nil
      case .lan(let lan, let id):
        do throws(LANError) {
          let inside = try lan.host(id: id, name: host.name)
          argv = inside.entering(command, nsenter: lan.tools.path("nsenter"), workingDirectory: LabFiles.absolute("."))
          childEnvironment = inside.environment(environment, extra: variables)
        } catch {
          errors.line("nearby lab: \(host.name): \(error.message)")
          control.stop(.internalError)
          break hosts
        }
      }
      guard let out = LabPipe(), let err = LabPipe() else {
        errors.line("nearby lab: cannot create a pipe: \(String(cString: strerror(errno)))")
        control.stop(.internalError)
        break
      }
      do {
        let child = try ChildProcess(
          argv[0], Array(argv.dropFirst()), environment: childEnvironment, standardInput: .null, standardOutput: .descriptor(out.write),
          standardError: .descriptor(err.write), newProcessGroup: true)
        children[host.name] = child
        started.append(host)
        control.register(host.name, child, group: true)
      } catch {
        errors.line("nearby lab: \(host.name): cannot start \(command.joined(separator: " ")): \(error)")
        control.stop(.internalError)
      }
      out.closeWrite()
      err.closeWrite()
      let prefix = host.name.padding(to: width) + " | "
      pipes.append(PrefixedPipe.forward(fd: out.read, prefix: prefix, to: output))
      pipes.append(PrefixedPipe.forward(fd: err.read, prefix: prefix, to: errors))
      if control.isStopping { break }
    }
    say("running " + started.map { "\($0.name) (\(describe($0.role)))" }.joined(separator: ", "))
    let began = ContinuousClock.now
    var unfinished = started.filter(\.runsToCompletion).count
    await withTaskGroup(of: HostEvent.self) { group in
      for (name, child) in children { group.addTask { .exited(name, await child.wait()) } }
      group.addTask {
        try? await Task.sleep(for: .milliseconds(100))
        return .tick
      }
      var running = children.count
      while running > 0, let event = await group.next() {
        switch event {
        case .exited(let name, let code):
          running -= 1
          control.exited(name)
          let host = started.first { $0.name == name }!
          if control.isStopping {
            say("\(name) stopped (exit \(code))")
          } else if code != 0 {
            say("\(name) failed with exit code \(code); stopping \(control.runningNames.joined(separator: ", "))")
            control.stop(.failure(host: name, code: code))
          } else {
            say("\(name) \(host.runsToCompletion ? "completed" : "ended") (exit 0)")
            if host.runsToCompletion {
              unfinished -= 1
              if unfinished == 0 && running > 0 {
                say("every script is done; stopping \(control.runningNames.joined(separator: ", "))")
                control.stop(.finished)
              }
            }
          }
        case .tick:
          if !control.isStopping && ContinuousClock.now - began >= plan.timeout {
            say("timed out after \(ScriptDuration.elapsed(plan.timeout)); stopping \(control.runningNames.joined(separator: ", "))")
            control.stop(.timeout)
          }
          control.killIfOverdue(grace: Self.killGrace)
          group.addTask {
            try? await Task.sleep(for: .milliseconds(100))
            return .tick
          }
        }
      }
      group.cancelAll()
    }
    // Show everything the hosts printed before the verdict (a process that inherited a
    // pipe could keep it open: do not wait for it long).
    let drained = ContinuousClock.now + .seconds(2)
    for pipe in pipes { await pipe.waitUntilFinished(deadline: drained) }
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

  private func describe(_ role: LabPlan.Role) -> String {
    switch role {
    case .script(let path): "script " + (path.split(separator: "/").last.map(String.init) ?? path)
    case .service: "service"
    case .command(let arguments): arguments.first.map { "command " + ($0.split(separator: "/").last.map(String.init) ?? $0) } ?? "command"
    case .idle: "nothing"
    }
  }
}
