import NearbySystem

#if canImport(Glibc)
  import Glibc
#endif

/// The hosts' processes of one lab run: starting (and restarting) each host's command with
/// its output streamed under its name, and which hosts are done. Owned by the task that runs
/// the hosts.
final class LabHosts {
  let lab: Lab
  let control: LabControl
  let launcher: Lab.Launcher
  /// Every host's state directory is `stateRoot/HOST`.
  let stateRoot: String
  /// Sees every line of every host (the faults' `when` triggers).
  let schedule: FaultSchedule
  private(set) var pipes: [PrefixedPipe] = []
  /// The hosts that were started, in order.
  private(set) var started: [LabPlan.Host] = []
  /// Hosts that run to completion and are done: exited 0, or killed by a fault (and not to
  /// be restarted).
  var finished: Set<String> = []
  /// How many processes run (or were started and not seen to exit).
  private(set) var live = 0

  init(lab: Lab, control: LabControl, launcher: Lab.Launcher, stateRoot: String, schedule: FaultSchedule) {
    self.lab = lab
    self.control = control
    self.launcher = launcher
    self.stateRoot = stateRoot
    self.schedule = schedule
  }

  /// `NEARBY_LAB_ADDR_<HOST>` (and `_<SEGMENT#>`) of every host, for commands that must
  /// name another host (a NATS cluster's routes, a relay's servers).
  private lazy var addressVariables: [String: String] = {
    var addresses: [String: [(segment: Int, address: String)]] = [:]
    for host in lab.plan.hosts {
      switch launcher {
      case .direct:
        addresses[host.name] = [(1, "127.0.0.1")]
      case .lan(let lan, let id):
        addresses[host.name] = (try? lan.host(id: id, name: host.name))?.addresses.map { ($0.segment, $0.address) } ?? []
      }
    }
    return LabPlan.addressVariables(addresses)
  }()

  /// The hosts that run to completion and are not done yet.
  var unfinished: [String] { started.filter { $0.runsToCompletion && !finished.contains($0.name) }.map(\.name) }

  func exited() { live -= 1 }

  /// Starts `host`'s command (again, for a restart: same command and state directory).
  /// - Returns: the process, or nil when the host runs nothing or it could not start (the
  ///   lab is then stopping).
  func start(_ host: LabPlan.Host) -> ChildProcess? {
    let stateDirectory = stateRoot + "/" + host.name
    guard let command = host.arguments(nearby: lab.executable, stateDirectory: stateDirectory) else { return nil }
    let executable = lab.executable
    let nearbyDirectory = String(executable[..<(executable.lastIndex(of: "/") ?? executable.startIndex)])
    let variables = [
      "NEARBY_NAME": host.name, "NEARBY_STATE_DIR": stateDirectory, "NEARBY_LAB_HOST": host.name,
      "PATH": nearbyDirectory + ":" + (lab.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"),
    ].merging(addressVariables) { $1 }
    let argv: [String]
    let environment: [String: String]
    switch launcher {
    case .direct:
      argv = command
      var merged = lab.environment.merging(variables) { $1 }
      merged["NEARBY_LAB_INNER"] = nil
      environment = merged
    case .lan(let lan, let id):
      do throws(LANError) {
        let inside = try lan.host(id: id, name: host.name)
        argv = inside.entering(command, nsenter: lan.tools.path("nsenter"), workingDirectory: LabFiles.absolute("."))
        environment = inside.environment(lab.environment, extra: variables)
      } catch {
        lab.errors.line("nearby lab: \(host.name): \(error.message)")
        control.stop(.internalError)
        return nil
      }
    }
    guard let out = LabPipe(), let err = LabPipe() else {
      lab.errors.line("nearby lab: cannot create a pipe: \(String(cString: strerror(errno)))")
      control.stop(.internalError)
      return nil
    }
    defer {
      out.closeWrite()
      err.closeWrite()
    }
    let child: ChildProcess
    do {
      child = try ChildProcess(
        argv[0], Array(argv.dropFirst()), environment: environment, standardInput: .null, standardOutput: .descriptor(out.write),
        standardError: .descriptor(err.write), newProcessGroup: true)
    } catch {
      lab.errors.line("nearby lab: \(host.name): cannot start \(command.joined(separator: " ")): \(error)")
      control.stop(.internalError)
      close(out.read)
      close(err.read)
      return nil
    }
    control.register(host.name, child, group: true)
    if !started.contains(where: { $0.name == host.name }) { started.append(host) }
    live += 1
    let prefix = host.name.padding(to: lab.width) + " | "
    let schedule = schedule
    let name = host.name
    pipes.append(PrefixedPipe.forward(fd: out.read, prefix: prefix, to: lab.output) { schedule.observe(host: name, line: $0) })
    pipes.append(PrefixedPipe.forward(fd: err.read, prefix: prefix, to: lab.errors) { schedule.observe(host: name, line: $0) })
    return child
  }
}
