import CNearbySystem
import NearbySystem
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// `lan loopback [--no-avahi] [--host-name NAME] -- CMD`: one private host on loopback.
///
/// ``enter(_:harness:)`` unshares a network and a mount namespace (and a user namespace when
/// not root) and executes the harness again as the supervisor, keeping its PID — the caller
/// waits on this very process, and the terminal's foreground process group is unchanged.
/// The supervisor (``supervise(avahi:hostName:command:harness:signals:)``) mounts a private
/// /run, brings `lo` up with multicast, starts a watchdog, dbus-daemon and avahi-daemon
/// bound to `lo`, runs CMD with stdio and TTY passed through and INT/TERM/HUP forwarded,
/// then tears everything down (``sweep(harness:)``) and exits with CMD's status.
enum LoopbackHost {
  /// Never returns: it executes the supervisor inside the new namespaces, or exits with
  /// the harness's exit code and a message. Runs before any other thread exists (an
  /// unprivileged user namespace cannot be made by a multithreaded process).
  static func enter(_ options: LANCommand.Loopback, harness: LANHarness) -> Never {
    func fail(_ error: LANError) -> Never {
      OutputWriter.standardError.line("lan: " + error.message)
      exit(error.exitCode)
    }
    let facts = IsolationCheck(
      isRoot: getuid() == 0, canUnshare: true, machineNamespaceKnown: NamespaceGuard.machine(environment: harness.environment) != nil,
      missingTools: harness.tools.missing(options.avahi ? ToolPaths.withAvahi : ToolPaths.base))
    if let problem = facts.verdict(noAvahi: !options.avahi) { fail(problem) }
    var environment = harness.environment
    environment[NamespaceGuard.outerVariable] = NamespaceGuard.current() ?? ""
    let (uid, gid) = (getuid(), getgid())
    guard nearby_unshare(IsolationCheck.unshareFlags) == 0 else {
      fail(LANError(.cannotIsolate, IsolationCheck.cannotIsolate + " (unshare: \(String(cString: strerror(errno))))"))
    }
    if uid != 0 && nearby_map_root(uid, gid) != 0 { fail(.failed("cannot map root in the user namespace: \(String(cString: strerror(errno)))")) }
    guard nearby_make_mounts_private() == 0 else { fail(.failed("cannot make the mounts private: \(String(cString: strerror(errno)))")) }
    let command = options.command.isEmpty ? [environment["SHELL"] ?? "/bin/bash"] : options.command
    execute(harness.executable, ["__loopback-inner", options.avahi ? "1" : "0", options.hostName] + command, environment: environment)
  }

  /// The supervisor inside the new namespaces.
  /// - Returns: CMD's exit status (128 + N when a signal ended it), 127 when it could not be
  ///   started, 1 when the host could not be set up, 128 + N for a signal during setup.
  static func supervise(avahi: Bool, hostName: String, command: [String], harness: LANHarness, signals: AsyncStream<Int32>?) async -> Int32 {
    do throws(LANError) {
      try NamespaceGuard.assertPrivate(environment: harness.environment)
    } catch {
      OutputWriter.standardError.line("lan: " + error.message)
      return 1
    }
    let state = Supervision()
    return await withTaskGroup(of: Int32?.self) { group in
      if let signals {
        group.addTask {
          for await signal in signals where [SIGINT, SIGTERM, SIGHUP].contains(signal) { state.deliver(signal) }
          return nil
        }
      }
      group.addTask {
        let code = await run(avahi: avahi, hostName: hostName, command: command, harness: harness, state: state)
        state.finished()
        if let watchdog = state.watchdog {
          watchdog.terminate(SIGKILL)
          await watchdog.wait()
        }
        await sweep(harness: harness)
        return code
      }
      var code: Int32 = 1
      for await result in group {
        if let result {
          code = result
          group.cancelAll()
        }
      }
      return code
    }
  }

  private static func run(avahi: Bool, hostName: String, command: [String], harness: LANHarness, state: Supervision) async -> Int32 {
    let directory = LANStateLayout.loopbackDirectory
    do throws(LANError) {
      guard nearby_mount_tmpfs("nearby-lan-run", "/run", "mode=0755") == 0 else {
        throw .failed("cannot mount a tmpfs on /run: \(String(cString: strerror(errno)))")
      }
      for path in ["/run/dbus", "/run/avahi-daemon", directory] { try LabFiles.makeDirectories(path) }
      try LabFiles.write((NamespaceGuard.current() ?? "") + "\n", to: directory + "/netns")
      try LabFiles.write(hostName + "\n", to: directory + "/hostname")
      try LabFiles.write("lo\n", to: directory + "/ifaces")
      _ = try await harness.run("ip", ["link", "set", "lo", "up", "multicast", "on"])
      // If this process dies without cleaning up (SIGKILL), the watchdog (a session of its
      // own, same namespaces) sweeps the namespace instead.
      state.watchdog = try? ChildProcess(
        harness.executable, ["__loopback-watchdog", String(getpid())], environment: harness.environment, standardInput: .null,
        standardOutput: .null, standardError: .null, newSession: true)
      let daemons = HostDaemons(directory: directory, environment: harness.environment, timeout: harness.timeout)
      if let signal = state.pendingSignal { return 128 + signal }
      try await daemons.startDBus()
      if let signal = state.pendingSignal { return 128 + signal }
      if avahi { try await daemons.startAvahi() }
    } catch {
      OutputWriter.standardError.line("lan: " + error.message)
      return 1
    }
    var environment = harness.environment
    environment["NEARBY_LAN"] = "loopback"
    environment["NEARBY_AVAHI"] = avahi ? "1" : "0"
    environment["NEARBY_LAN_HOSTNAME"] = hostName
    environment["NEARBY_LAN_SCRIPT"] = harness.executable
    // CMD stays in our process group (the terminal's foreground group: TTY reads work) with
    // our stdio, every signal at its default.
    let child: ChildProcess
    do {
      if let signal = state.pendingSignal { return 128 + signal }
      child = try ChildProcess(command[0], Array(command.dropFirst()), environment: environment)
    } catch {
      OutputWriter.standardError.line("lan: cannot run \(command[0]): \(error)")
      return 127
    }
    state.started(child)
    return await child.wait()
  }

  /// Replaces this process with `executable ARGUMENTS` (every signal unblocked).
  static func execute(_ executable: String, _ arguments: [String], environment: [String: String]) -> Never {
    nearby_unblock_all_signals()
    let argv = ([executable] + arguments).map { strdup($0) } + [nil]
    let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
    execve(executable, argv, envp)
    OutputWriter.standardError.line("lan: cannot run \(executable): \(String(cString: strerror(errno)))")
    exit(127)
  }
}

/// What the supervisor's tasks share: the command once it runs, the watchdog, and a signal
/// that arrived before the command started.
private final class Supervision: Sendable {
  private struct State {
    var child: ChildProcess?
    var finished = false
    var pending: Int32?
    var watchdog: ChildProcess?
  }
  private let state = Mutex(State())

  var watchdog: ChildProcess? {
    get { state.withLock { $0.watchdog } }
    set { state.withLock { $0.watchdog = newValue } }
  }

  var pendingSignal: Int32? { state.withLock { $0.pending } }

  func started(_ child: ChildProcess) { state.withLock { $0.child = child } }
  func finished() { state.withLock { $0.finished = true } }

  /// Forwards a signal to the command, or remembers it while setting up (and ignores it
  /// once the command has ended: the teardown must not be interrupted).
  func deliver(_ signal: Int32) {
    let target: ChildProcess? = state.withLock { state in
      guard let child = state.child else {
        if state.pending == nil { state.pending = signal }
        return nil
      }
      return state.finished ? nil : child
    }
    guard let target else { return }
    // A Ctrl-C from the terminal already reached the command (it shares our foreground
    // process group): forwarding it would deliver it twice.
    if signal == SIGINT, let status = ProcessTable.status(getpid()), status.terminal != 0, status.foregroundGroup == status.group { return }
    target.terminate(signal)
  }
}
