import NearbySystem

#if canImport(Glibc)
  import Glibc
#endif

/// The `nearby-lan` tool (also run as `scripts/lan`): the harness's command line. Its
/// `main.swift` only wires these calls up:
///
/// ```swift
/// let tool = LANTool(arguments: Array(CommandLine.arguments.dropFirst()))
/// tool.replaceProcessIfNeeded()
/// let signals = SignalWatcher.install([SIGINT, SIGTERM, SIGHUP])
/// Task.detached { exit(await tool.run(signals: signals?.signals)) }
/// ```
///
/// Exit codes: 0, 1 (a failure), 2 (cannot isolate here), 3 (tools missing, or `avahi
/// status` of a stopped daemon), 64 (usage), and for `loopback` the command's own.
public struct LANTool: Sendable {
  public let command: LANCommand
  public let harness: LANHarness

  /// Parses the arguments (after the program name). A usage error exits 64 and `help`
  /// exits 0 here. Call it first, before any thread starts.
  public init(arguments: [String]) {
    Self.keepStandardStreamsOpen()
    // avahi-daemon, dbus-daemon and ip live in sbin, which a non-root PATH lacks; commands
    // run inside inherit the longer PATH.
    let path = getenv("PATH").map { String(cString: $0) } ?? "/usr/local/bin:/usr/bin:/bin"
    let missing = ["/usr/sbin", "/sbin"].filter { !path.split(separator: ":").contains(Substring($0)) }
    setenv("PATH", ([path] + missing).joined(separator: ":"), 1)
    let environment = Self.currentEnvironment()
    harness = LANHarness(executable: LabFiles.executablePath(fallback: CommandLine.arguments.first ?? "nearby-lan"), environment: environment)
    do throws(LANError) {
      command = try LANCommand.parse(arguments)
    } catch {
      OutputWriter.standardError.line("lan: \(error.message)\nlan: run 'lan help' for usage")
      exit(64)
    }
    if command == .help {
      OutputWriter.standardOutput.write(LANUsage.text)
      exit(0)
    }
  }

  /// Runs the commands that become another program (`loopback`, `exec`, the anchor): they
  /// must run before any other thread exists. Returns for every other command.
  public func replaceProcessIfNeeded() {
    switch command {
    case .loopback(let options): LoopbackHost.enter(options, harness: harness)
    case .anchor(let namespace, let directory): Anchor.run(namespace: namespace, directory: directory, environment: harness.environment)
    case .exec(let id, let host, let assignments, let arguments):
      do throws(LANError) {
        let found = try harness.host(id: id, name: host)
        var extra: [String: String] = [:]
        for assignment in assignments {
          let equals = assignment.firstIndex(of: "=")!
          extra[String(assignment[..<equals])] = String(assignment[assignment.index(after: equals)...])
        }
        let directory = LabFiles.absolute(".")
        let command = found.entering(
          arguments, nsenter: harness.tools.path("nsenter"), workingDirectory: LabFiles.isDirectory(directory) ? directory : nil)
        LoopbackHost.execute(command[0], Array(command.dropFirst()), environment: found.environment(harness.environment, extra: extra))
      } catch {
        Self.fail(error)
      }
    default: return
    }
  }

  /// Runs the command. SIGINT, SIGTERM and SIGHUP interrupt it (``LANHarness/interrupt(_:)``:
  /// a half-built LAN is removed) and exit 128 + the signal; `loopback`'s supervisor forwards
  /// them to its command instead.
  public func run(signals: AsyncStream<Int32>?) async -> Int32 {
    switch command {
    case .loopbackInner(let avahi, let hostName, let arguments):
      return await LoopbackHost.supervise(avahi: avahi, hostName: hostName, command: arguments, harness: harness, signals: signals)
    case .loopbackWatchdog(let pid):
      return await LoopbackHost.watch(pid, harness: harness, signals: signals)
    default: break
    }
    return await withTaskGroup(of: Int32?.self) { group in
      if let signals {
        group.addTask { [harness] in
          for await signal in signals where [SIGINT, SIGTERM, SIGHUP].contains(signal) { harness.interrupt(signal) }
          return nil
        }
      }
      group.addTask { await self.perform() }
      var code: Int32 = 0
      for await result in group {
        guard let result else { continue }
        code = harness.interruption.map { 128 + $0 } ?? result
        group.cancelAll()
      }
      return code
    }
  }

  private func perform() async -> Int32 {
    do throws(LANError) {
      switch command {
      case .check(let noAvahi):
        if let problem = await harness.check(noAvahi: noAvahi) { throw problem }
      case .up(let id, let segments): try await harness.up(id: id, segments: segments)
      case .down(let id): try await harness.down(id: id)
      case .list: for id in harness.list() { OutputWriter.standardOutput.line(id) }
      case .address(let id, let host, let segment): OutputWriter.standardOutput.line(try harness.address(id: id, host: host, segment: segment))
      case .hostName(let id, let host): OutputWriter.standardOutput.line(try harness.hostName(id: id, host: host))
      case .avahi(let target, let action):
        let status = try await harness.avahi(target, action)
        if action == .status {
          OutputWriter.standardOutput.line(status ?? "stopped")
          return status == nil ? 3 : 0
        }
      case .startDaemons(let directory):
        let daemons = HostDaemons(directory: directory, environment: harness.environment, timeout: harness.timeout)
        try await daemons.startDBus()
        try await daemons.startAvahi()
      case .startAvahi(let directory):
        try await HostDaemons(directory: directory, environment: harness.environment, timeout: harness.timeout).startAvahi()
      case .fault(let id, let action): try await harness.inject(action, into: id)
      case .selftest: return await SelfTest(harness: harness).run()
      case .selftestLoopback(let pidFile): return await SelfTest(harness: harness).insideLoopback(pidFile: pidFile)
      case .help, .loopback, .exec, .anchor, .loopbackInner, .loopbackWatchdog: break
      }
      return 0
    } catch {
      OutputWriter.standardError.line("lan: " + error.message)
      return error.exitCode
    }
  }

  private static func fail(_ error: LANError) -> Never {
    OutputWriter.standardError.line("lan: " + error.message)
    exit(error.exitCode)
  }

  /// A closed stdin, stdout or stderr would be taken over by the next file opened (and
  /// confuse everything, the command included): give it /dev/null instead.
  private static func keepStandardStreamsOpen() {
    for fd: Int32 in 0...2 where fcntl(fd, F_GETFD) < 0 {
      _ = open("/dev/null", O_RDWR)
    }
  }

  static func currentEnvironment() -> [String: String] {
    var result: [String: String] = [:]
    var pointer = environ
    while let entry = pointer.pointee {
      let text = String(cString: entry)
      if let equals = text.firstIndex(of: "=") { result[String(text[..<equals])] = String(text[text.index(after: equals)...]) }
      pointer += 1
    }
    return result
  }
}
