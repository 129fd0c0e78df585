import NearbySystem

#if canImport(Glibc)
  import Glibc
#endif

/// Starting and finding a host's dbus-daemon and avahi-daemon. Everything here runs INSIDE
/// the host's network and mount namespaces (with its private /run), and asserts that first.
///
/// The host's state directory holds `hostname` and `ifaces` (what avahi gets), the daemons'
/// configurations, logs (`dbus.log`, `avahi.log`) and PIDs (`dbus.pid`, `avahi.pid`).
struct HostDaemons {
  let directory: String
  let environment: [String: String]
  let tools: ToolPaths
  let timeout: Duration

  init(directory: String, environment: [String: String], timeout: Duration) {
    self.directory = directory
    self.environment = environment
    tools = ToolPaths(environment: environment)
    self.timeout = timeout
  }

  /// The PID of this namespace's running dbus-daemon, from `dbus.pid`.
  var dbusPID: pid_t? {
    guard let text = LabFiles.firstLine(directory + "/dbus.pid"), let pid = pid_t(text), ProcessTable.isAlive(pid),
      ProcessTable.name(pid) == "dbus-daemon", ProcessTable.sameNamespace("/proc/\(pid)/ns/net", "/proc/thread-self/ns/net")
    else { return nil }
    return pid
  }

  /// The PID of the running avahi-daemon of the network namespace at `namespace`, from the
  /// state directory's `avahi.pid` or the host's own `/run/avahi-daemon/pid` (`root` is the
  /// path of the host's root seen from here: "" inside it, `/proc/ANCHOR/root` outside).
  static func avahiPID(directory: String, namespace: String, root: String) -> pid_t? {
    for file in [directory + "/avahi.pid", root + "/run/avahi-daemon/pid"] {
      if let text = LabFiles.firstLine(file), let pid = pid_t(text), ProcessTable.isAlive(pid), ProcessTable.name(pid) == "avahi-daemon",
        ProcessTable.sameNamespace("/proc/\(pid)/ns/net", namespace)
      {
        return pid
      }
    }
    return nil
  }

  /// Starts the namespace's own system bus: the distribution's configuration plus much
  /// higher limits (``DaemonConfiguration/dbus(including:)``).
  /// - Throws: ``LANError`` with the end of `dbus.log` when it does not come up.
  func startDBus() async throws(LANError) {
    try NamespaceGuard.assertPrivate(environment: environment)
    let log = directory + "/dbus.log"
    try LabFiles.makeDirectories("/run/dbus")
    unlink("/run/dbus/pid")
    unlink("/run/dbus/system_bus_socket")
    var base = DaemonConfiguration.systemBusConfiguration
    if !DaemonConfiguration.isInitialUserNamespace(uidMap: LabFiles.read("/proc/self/uid_map") ?? "") {
      base = directory + "/dbus-base.conf"
      try LabFiles.write(DaemonConfiguration.systemBusWithoutUser(LabFiles.read(DaemonConfiguration.systemBusConfiguration) ?? ""), to: base)
    }
    try LabFiles.write(DaemonConfiguration.dbus(including: base), to: directory + "/dbus.conf")
    try LabFiles.write("=== lan: starting dbus-daemon \(Self.timestamp())\n", to: log, append: true)
    // --fork returns once the socket is bound; --print-pid gives the daemon's PID;
    // DBUS_DEBUG_OUTPUT keeps its stderr (our log) open after forking.
    let pidFile = open(directory + "/dbus.pid", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
    let logFile = open(log, O_WRONLY | O_APPEND | O_CLOEXEC)
    defer {
      close(pidFile)
      close(logFile)
    }
    guard pidFile >= 0, logFile >= 0 else { throw .failed("cannot open \(directory)/dbus.pid or dbus.log: \(String(cString: strerror(errno)))") }
    var variables = environment
    variables["DBUS_DEBUG_OUTPUT"] = "1"
    let code: Int32
    do {
      let starter = try ChildProcess(
        tools.path("dbus-daemon"), ["--config-file=\(directory)/dbus.conf", "--fork", "--nosyslog", "--print-pid=1"], environment: variables,
        standardInput: .null, standardOutput: .descriptor(pidFile), standardError: .descriptor(logFile))
      code = await starter.wait()
    } catch {
      throw .failed("cannot start dbus-daemon: \(error)")
    }
    guard code == 0 else { throw .failed("dbus-daemon failed to start (exit \(code))\n" + LabFiles.tail(log)) }
    let ready = await ProcessTable.waitUntil(timeout) { LabFiles.isSocket("/run/dbus/system_bus_socket") && dbusPID != nil }
    guard ready else { throw .failed("dbus-daemon did not come up within \(timeout.components.seconds)s\n" + LabFiles.tail(log)) }
  }

  /// Starts avahi-daemon with the host's name and interfaces (from `hostname` and `ifaces`),
  /// and its system bus first if that is not running. The daemon runs in the foreground (it
  /// logs to our file, not to a missing syslog) in a session of its own (a Ctrl-C meant for
  /// a test does not reach it); its starter does not wait for it.
  /// - Throws: ``LANError`` with the end of `avahi.log` when it does not come up.
  func startAvahi() async throws(LANError) {
    try NamespaceGuard.assertPrivate(environment: environment)
    if dbusPID == nil { try await startDBus() }
    let log = directory + "/avahi.log"
    try LabFiles.makeDirectories("/run/avahi-daemon")
    // Left behind by a SIGKILLed daemon; avahi would refuse to start.
    unlink("/run/avahi-daemon/pid")
    unlink("/run/avahi-daemon/socket")
    let hostName = LabFiles.firstLine(directory + "/hostname") ?? "nearby"
    let interfaces = LabFiles.firstLine(directory + "/ifaces") ?? "lo"
    try LabFiles.write(DaemonConfiguration.avahi(hostName: hostName, interfaces: interfaces), to: directory + "/avahi.conf")
    try LabFiles.write("=== lan: starting avahi-daemon \(Self.timestamp())\n", to: log, append: true)
    let start = LabFiles.size(log)
    let logFile = open(log, O_WRONLY | O_APPEND | O_CLOEXEC)
    guard logFile >= 0 else { throw .failed("cannot open \(log): \(String(cString: strerror(errno)))") }
    defer { close(logFile) }
    let daemon: ChildProcess
    do {
      daemon = try ChildProcess(
        tools.path("avahi-daemon"), ["-f", directory + "/avahi.conf", "--no-drop-root", "--no-chroot", "--no-rlimits"], environment: environment,
        standardInput: .null, standardOutput: .descriptor(logFile), standardError: .descriptor(logFile), newSession: true)
    } catch {
      throw .failed("cannot start avahi-daemon: \(error)")
    }
    let ready = await ProcessTable.waitUntil(timeout) {
      guard ProcessTable.isAlive(daemon.pid) else { return true }  // stop polling: its death is noticed below
      return LabFiles.isSocket("/run/avahi-daemon/socket") && Self.text(of: log, from: start).contains("Server startup complete")
    }
    guard ready, ProcessTable.isAlive(daemon.pid) else {
      if ProcessTable.isAlive(daemon.pid) {
        await ProcessTable.terminate([daemon.pid], grace: .seconds(3))
        throw .failed("avahi-daemon did not finish starting within \(timeout.components.seconds)s\n" + LabFiles.tail(log))
      }
      throw .failed("avahi-daemon exited during startup\n" + LabFiles.tail(log))
    }
    var pid = daemon.pid
    if let text = LabFiles.firstLine("/run/avahi-daemon/pid"), let own = pid_t(text), ProcessTable.isAlive(own),
      ProcessTable.name(own) == "avahi-daemon"
    {
      pid = own
    }
    try LabFiles.write("\(pid)\n", to: directory + "/avahi.pid")
  }

  /// What `path` holds after its first `offset` bytes.
  private static func text(of path: String, from offset: Int) -> String { LabFiles.read(path, from: offset) ?? "" }

  /// Local time as `2026-11-29 12:00:00`, for the logs.
  static func timestamp() -> String {
    var now = time(nil)
    var parts = tm()
    localtime_r(&now, &parts)
    var buffer = [CChar](repeating: 0, count: 32)
    let count = strftime(&buffer, buffer.count, "%F %T", &parts)
    return String(decoding: buffer[0..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
  }
}
