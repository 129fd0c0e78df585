import NearbyChat
import NearbyTransport

#if canImport(Glibc)
  import Glibc
#endif

/// `nearby lab`: several peers on a private LAN with real Avahi, without touching this
/// machine's network.
///
/// With segments, `lan up` builds one network namespace per host (veth links, one bridge
/// per segment, an avahi-daemon per host) and every host's command runs through `lan exec`.
/// With `--loopback`, the lab runs itself again inside `lan loopback` (one namespace with
/// its own avahi-daemon on `lo`), where it starts the hosts' commands directly.
/// Every line a host prints is shown with the host's name in front.
public struct Lab: Sendable {
  public let plan: LabPlan
  /// The arguments of this invocation after the program name (to run again inside `lan loopback`).
  public let arguments: [String]
  public let environment: [String: String]
  /// The `nearby` executable.
  public let executable: String
  public let output: OutputWriter
  public let errors: OutputWriter

  /// How long stopped hosts get before SIGKILL.
  static let killGrace: Duration = .seconds(5)

  public init(
    plan: LabPlan, arguments: [String], environment: [String: String], executable: String, output: OutputWriter = .standardOutput,
    errors: OutputWriter = .standardError
  ) {
    self.plan = plan
    self.arguments = arguments
    self.environment = environment
    self.executable = executable
    self.output = output
    self.errors = errors
  }

  /// Whether this process is the lab run again inside `lan loopback`.
  var isInsideLoopback: Bool { environment["NEARBY_LAB_INNER"] == "1" && environment["NEARBY_LAN"] == "loopback" }

  /// Runs the lab. SIGINT or SIGTERM stops the hosts and cleans up.
  /// - Returns: 0 when every script (or command) completed; otherwise the first failing
  ///   host's exit code, 124 on timeout, 128 + the signal, or 1 when the lab itself failed
  ///   (no harness, no isolation, the LAN could not be built).
  public func run(signals: AsyncStream<Int32>?) async -> Int32 {
    let control = LabControl()
    return await withTaskGroup(of: Int32?.self) { group in
      if let signals {
        group.addTask {
          for await signal in signals where signal == SIGINT || signal == SIGTERM {
            if control.stop(.signal(signal)) {
              self.say("\(signal == SIGINT ? "SIGINT" : "SIGTERM"): stopping \(control.runningNames.joined(separator: ", "))")
            } else {
              self.say("stopping now (SIGKILL)")
              control.killAll()
            }
          }
          return nil
        }
      }
      group.addTask { await self.runLab(control) }
      var code: Int32 = 1
      while let result = await group.next() {
        if let result {
          code = result
          group.cancelAll()
        }
      }
      return code
    }
  }

  private func runLab(_ control: LabControl) async -> Int32 {
    if isInsideLoopback { return await runHosts(control, launcher: .direct) }
    let lan: LANHarness
    do throws(LANHarnessNotFound) {
      lan = try LANHarness.locate(environment: environment, executable: executable, isExecutable: LANHarness.isExecutableFile)
    } catch {
      errors.line("nearby lab: \(error)")
      return 1
    }
    let check = await lan.run(["check"])
    switch check.code {
    case 0: break
    case 2:
      errors.line(
        "nearby lab: cannot isolate the peers here: it needs root (or user namespaces) to build private networks with their own avahi-daemon, "
          + "and nothing is ever run on this machine's own network. Run it as root or with sudo. The harness says:")
      errors.line(check.output)
      return 1
    case 3:
      errors.line("nearby lab: tools are missing (run scripts/install-deps). The harness says:\n\(check.output)")
      return 1
    default:
      errors.line("nearby lab: '\(lan.path) check' failed (exit \(check.code)):\n\(check.output)")
      return 1
    }
    if control.isStopping { return exitCode(control) }
    switch plan.network {
    case .loopback: return await runInLoopback(control, lan: lan)
    case .segments(let segments): return await runOnSegments(control, lan: lan, segments: segments)
    }
  }

  /// Runs this lab again inside `lan loopback`, which forwards our signals to it and removes
  /// the namespace and its daemons when it exits.
  private func runInLoopback(_ control: LabControl, lan: LANHarness) async -> Int32 {
    say("hosts \(plan.hosts.map(\.name).joined(separator: ", ")) share one loopback network")
    var environment = environment
    environment["NEARBY_LAB_INNER"] = "1"
    let child: ChildProcess
    do {
      child = try ChildProcess(
        lan.path, ["loopback", "--host-name", "nearby-lab", "--", executable] + arguments, environment: environment, standardInput: .null,
        newProcessGroup: true)
    } catch {
      errors.line("nearby lab: cannot start \(lan.path): \(error)")
      return 1
    }
    control.register("the loopback host", child, group: false)
    let code = await withTaskGroup(of: Int32?.self) { group in
      group.addTask { await child.wait() }
      group.addTask {
        // A backstop in case the inner lab does not end on its own.
        try? await Task.sleep(for: plan.timeout + .seconds(30))
        if !Task.isCancelled { control.stop(.timeout) }
        while !Task.isCancelled {
          control.killIfOverdue(grace: Self.killGrace)
          try? await Task.sleep(for: .milliseconds(200))
        }
        return nil
      }
      let code = await group.next() ?? 1
      group.cancelAll()
      return code ?? 1
    }
    control.exited("the loopback host")
    if case .signal(let signal) = control.reason { return 128 + signal }
    return code
  }

  /// Builds the LAN with `lan up`, runs the hosts through `lan exec`, and always `lan down`.
  private func runOnSegments(_ control: LabControl, lan: LANHarness, segments: [[String]]) async -> Int32 {
    let id = "lab\(getpid())-\(String(UInt16.random(in: 0...UInt16.max), radix: 16))"
    let layout = segments.map { $0.joined(separator: ",") }.joined(separator: " ")
    say("building LAN \(id): segments \(layout)")
    let up = await lan.run(["up", id] + segments.map { $0.joined(separator: ",") })
    var code: Int32
    if up.code != 0 {
      errors.line("nearby lab: could not build the LAN (lan up \(id) \(layout), exit \(up.code)):\n\(up.output)")
      code = 1
    } else if control.isStopping {
      code = exitCode(control)
    } else {
      code = await runHosts(control, launcher: .lan(lan, id: id))
    }
    let down = await lan.run(["down", id])
    if down.code != 0 {
      errors.line("nearby lab: 'lan down \(id)' failed (exit \(down.code)); remove what is left with: \(lan.path) down \(id)\n\(down.output)")
      if code == 0 { code = 1 }
    }
    return code
  }

  enum Launcher {
    /// Start commands here (inside `lan loopback`).
    case direct
    /// Through `lan exec ID HOST`.
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
    for host in plan.hosts {
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
        argv =
          [lan.path, "exec", id, host.name] + variables.sorted { $0.key < $1.key }.flatMap { ["--env", "\($0.key)=\($0.value)"] } + ["--"] + command
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
            say("timed out after \(ScriptDurationText.seconds(plan.timeout)); stopping \(control.runningNames.joined(separator: ", "))")
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
    for pipe in pipes { await pipe.waitUntilFinished(limit: .seconds(2)) }
    let code = exitCode(control)
    let elapsed = ContinuousClock.now - began
    if code == 0 {
      say("passed: every host completed (\(ScriptDurationText.seconds(elapsed)))")
    } else if case .failure(let host, let failed) = control.reason {
      say("failed: \(host) exited with \(failed) (\(ScriptDurationText.seconds(elapsed)))")
    } else if case .signal(let signal) = control.reason {
      say("stopped by \(signal == SIGINT ? "SIGINT" : "SIGTERM") (\(ScriptDurationText.seconds(elapsed)))")
    } else if control.reason == .timeout {
      say("failed: timed out after \(ScriptDurationText.seconds(plan.timeout))")
    }
    return code
  }

  private func exitCode(_ control: LabControl) -> Int32 {
    switch control.reason {
    case .none, .finished: 0
    case .failure(_, let code): code
    case .timeout: 124
    case .signal(let signal): 128 + signal
    case .internalError: 1
    }
  }

  private func describe(_ role: LabPlan.Role) -> String {
    switch role {
    case .script(let path): "script " + (path.split(separator: "/").last.map(String.init) ?? path)
    case .service: "service"
    case .command(let arguments): arguments.first.map { "command " + ($0.split(separator: "/").last.map(String.init) ?? $0) } ?? "command"
    case .idle: "nothing"
    }
  }

  /// A line from the lab itself.
  func say(_ text: String) {
    let width = max(3, plan.hosts.map(\.name.count).max() ?? 0)
    errors.line("lab".padding(to: width) + " | " + text)
  }
}

enum ScriptDurationText {
  /// `1.25s`
  static func seconds(_ duration: Duration) -> String {
    let hundredths = (duration.components.seconds * 1000 + duration.components.attoseconds / 1_000_000_000_000_000) / 10
    let fraction = hundredths % 100
    return "\(hundredths / 100).\(fraction < 10 ? "0" : "")\(fraction)s"
  }
}

extension String {
  func padding(to width: Int) -> String { count >= width ? self : self + String(repeating: " ", count: width - count) }
}
