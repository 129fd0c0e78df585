import NearbyScript
import NearbySystem

#if canImport(Glibc)
  import Glibc
#endif

/// `nearby lab`: several peers on a private LAN with real Avahi, without touching this
/// machine's network.
///
/// With segments, the harness (``LANHarness``, in this process) builds one network namespace
/// per host (veth links, one bridge per segment, an avahi-daemon per host) and every host's
/// command runs inside its host. With `--loopback`, the lab runs itself again inside
/// `nearby-lan loopback` (one namespace with its own avahi-daemon on `lo`), where it starts
/// the hosts' commands directly.
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

  /// The errors of the hosts' scripts and of the faults file, each formatted with its file
  /// name (empty: all parse, and the faults fit the lab).
  public static func scriptErrors(_ plan: LabPlan) -> [String] {
    let scripts = plan.hosts.compactMap { host -> String? in
      guard case .script(let path) = host.role else { return nil }
      guard let text = LabFiles.read(path) else { return "\(path): cannot read it" }
      do throws(ChatScriptErrors) {
        _ = try ChatScript.parse(text)
        return nil
      } catch {
        return error.formatted(file: path)
      }
    }
    guard let path = plan.faults else { return scripts }
    guard let text = LabFiles.read(path) else { return scripts + ["\(path): cannot read it"] }
    let (faults, errors) = FaultScript.read(text)
    let problems = (errors + faults.problems(in: plan)).sorted { ($0.line, $0.column) < ($1.line, $1.column) }
    return scripts + (problems.isEmpty ? [] : [ChatScriptErrors(errors: problems).formatted(file: path)])
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
      let path = try LANHarness.locate(environment: environment, executable: executable, isExecutable: LANHarness.isExecutableFile)
      lan = LANHarness(executable: path, environment: environment)
    } catch {
      errors.line("nearby lab: \(error)")
      return 1
    }
    if let problem = await lan.check() {
      switch problem.kind {
      case .cannotIsolate:
        errors.line(
          "nearby lab: cannot isolate the peers here: it needs root (or user namespaces) to build private networks with their own avahi-daemon, "
            + "and nothing is ever run on this machine's own network. Run it as root or with sudo. The harness says:")
        errors.line("lan: " + problem.message)
      case .toolsMissing:
        errors.line("nearby lab: tools are missing (run scripts/install-deps). The harness says:\nlan: \(problem.message)")
      default:
        errors.line("nearby lab: the harness check failed: \(problem.message)")
      }
      return 1
    }
    if control.isStopping { return exitCode(control) }
    switch plan.network {
    case .loopback: return await runInLoopback(control, lan: lan)
    case .segments(let segments): return await runOnSegments(control, lan: lan, segments: segments)
    }
  }

  /// Runs this lab again inside `nearby-lan loopback`, which forwards our signals to it and
  /// removes the namespace and its daemons when it exits.
  private func runInLoopback(_ control: LabControl, lan: LANHarness) async -> Int32 {
    say("hosts \(plan.hosts.map(\.name).joined(separator: ", ")) share one loopback network")
    var environment = environment
    environment["NEARBY_LAB_INNER"] = "1"
    let child: ChildProcess
    do {
      child = try ChildProcess(
        lan.executable, ["loopback", "--host-name", "nearby-lab", "--", executable] + arguments, environment: environment, standardInput: .null,
        newProcessGroup: true)
    } catch {
      errors.line("nearby lab: cannot start \(lan.executable): \(error)")
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

  /// Builds the LAN, runs the hosts inside it, and always tears it down.
  private func runOnSegments(_ control: LabControl, lan: LANHarness, segments: [[String]]) async -> Int32 {
    let id = "lab\(getpid())-\(String(UInt16.random(in: 0...UInt16.max), radix: 16))"
    let layout = segments.map { $0.joined(separator: ",") }.joined(separator: " ")
    say("building LAN \(id): segments \(layout)")
    var code: Int32
    do throws(LANError) {
      try await lan.up(id: id, segments: segments.map { $0.joined(separator: ",") })
      code = control.isStopping ? exitCode(control) : await runHosts(control, launcher: .lan(lan, id: id))
    } catch {
      errors.line("nearby lab: could not build the LAN (segments \(layout)): \(error.message)")
      code = 1
    }
    do throws(LANError) {
      try await lan.down(id: id)
    } catch {
      errors.line("nearby lab: tearing LAN \(id) down failed; remove what is left with: \(lan.executable) down \(id)\n\(error.message)")
      if code == 0 { code = 1 }
    }
    return code
  }

  func exitCode(_ control: LabControl) -> Int32 {
    switch control.reason {
    case .none, .finished: 0
    case .failure(_, let code): code
    case .timeout: 124
    case .signal(let signal): 128 + signal
    case .internalError: 1
    }
  }

  /// The width of the host names in front of the lines.
  var width: Int { max(3, plan.hosts.map(\.name.count).max() ?? 0) }

  /// A line from the lab itself.
  func say(_ text: String) {
    errors.line("lab".padding(to: width) + " | " + text)
  }
}

extension String {
  func padding(to width: Int) -> String { count >= width ? self : self + String(repeating: " ", count: width - count) }
}
