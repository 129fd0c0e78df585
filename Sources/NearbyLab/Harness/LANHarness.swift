import NearbySystem
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// The private-LAN harness: it builds LANs of network namespaces, each host with its own
/// /run, dbus-daemon and avahi-daemon, runs commands in their hosts, and tears them down —
/// without ever starting a daemon in the machine's own network namespace.
///
/// `nearby lab` and the tests use it in-process; `nearby-lan` (behind `scripts/lan`) is its
/// command line. Work that must happen inside a namespace (a host's anchor, starting its
/// daemons) runs in processes of ``executable``, the `nearby-lan` tool.
public final class LANHarness: Sendable {
  /// The `nearby-lan` executable (or anything that accepts the same commands).
  public let executable: String
  let environment: [String: String]
  let tools: ToolPaths
  /// The longest wait for a daemon or an anchor (`NEARBY_LAN_TIMEOUT` seconds, 10 by default).
  let timeout: Duration
  /// How long processes get between SIGTERM and SIGKILL (`NEARBY_LAN_KILL_GRACE`, 3 s).
  let killGrace: Duration
  /// Anchors this process started, by LAN: reaped when the LAN goes down.
  private let anchors = Mutex<[String: [ChildProcess]]>([:])
  private let interruptingSignal = Atomic<Int32>(0)

  /// - Parameters:
  ///   - executable: the `nearby-lan` tool (see ``locate(environment:executable:isExecutable:)``).
  ///   - environment: the environment the harness runs with (commands in hosts inherit it).
  public init(executable: String, environment: [String: String]) {
    self.executable = executable
    self.environment = environment
    tools = ToolPaths(environment: environment)
    timeout = .seconds(environment["NEARBY_LAN_TIMEOUT"].flatMap(Int.init) ?? 10)
    killGrace = .seconds(environment["NEARBY_LAN_KILL_GRACE"].flatMap(Int.init) ?? 3)
  }

  /// Where `nearby-lan` is, for a `nearby` at `executable`: next to it (what `swift build`
  /// and an installation put there), then `$NEARBY_LAN_SCRIPT` (set inside the harness),
  /// then `nearby-lan` in `PATH`.
  /// - Parameters:
  ///   - executable: the running `nearby`'s path (symbolic links resolved).
  ///   - isExecutable: whether a path is an executable file.
  /// - Throws: ``LANHarnessNotFound`` with the places it looked and what to do.
  public static func locate(environment: [String: String], executable: String, isExecutable: (String) -> Bool) throws(LANHarnessNotFound)
    -> String
  {
    var looked: [String] = []
    if let slash = executable.lastIndex(of: "/") {
      let candidate = String(executable[..<slash]) + "/nearby-lan"
      if isExecutable(candidate) { return candidate }
      looked.append(candidate)
    }
    if let variable = environment["NEARBY_LAN_SCRIPT"], !variable.isEmpty {
      if isExecutable(variable) { return variable }
      looked.append("NEARBY_LAN_SCRIPT=\(variable) (not an executable file)")
    }
    let directories = (environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin").split(separator: ":").map(String.init)
    for directory in directories where !directory.isEmpty {
      let candidate = directory + "/nearby-lan"
      if isExecutable(candidate) { return candidate }
    }
    looked.append("nearby-lan in PATH")
    throw LANHarnessNotFound(looked: looked)
  }

  /// Whether `path` is a regular file we may execute.
  public static func isExecutableFile(_ path: String) -> Bool {
    var info = stat()
    return stat(path, &info) == 0 && info.st_mode & S_IFMT == S_IFREG && access(path, X_OK) == 0
  }

  /// Asks work in progress to stop at its next step (a LAN being built is removed again);
  /// `signal` is what asked.
  public func interrupt(_ signal: Int32) {
    _ = interruptingSignal.compareExchange(expected: 0, desired: signal, ordering: .relaxed)
  }

  /// The signal that interrupted the harness, if one did.
  public var interruption: Int32? {
    let signal = interruptingSignal.load(ordering: .relaxed)
    return signal == 0 ? nil : signal
  }

  /// The IDs of the LANs that exist.
  public func list() -> [String] {
    (LabFiles.list(LANStateLayout.root) ?? []).filter { LabFiles.isDirectory(LANStateLayout.lanDirectory($0)) }.sorted()
  }

  /// A running host of LAN `id`.
  /// - Throws: ``LANError`` when the LAN, the host or its anchor process is missing.
  public func host(id: String, name: String) throws(LANError) -> LANHost {
    try LANTopology.validateID(id)
    try LANTopology.validateHost(name)
    let lan = LANStateLayout.lanDirectory(id)
    guard LabFiles.isDirectory(lan) else { throw .failed("no LAN '\(id)' (see: lan list)") }
    let directory = LANStateLayout.hostDirectory(id, name)
    guard LabFiles.isDirectory(directory) else {
      let hosts = (LabFiles.read(lan + "/hosts") ?? "").split(separator: "\n").joined(separator: " ")
      throw .failed("LAN '\(id)' has no host '\(name)' (hosts: \(hosts))")
    }
    let namespace = LabFiles.firstLine(directory + "/netns") ?? LANTopology.hostNamespace(id, name)
    guard let anchor = Self.anchor(directory: directory, namespace: namespace) else {
      throw .failed("host '\(name)' of LAN '\(id)' is not running (anchor gone); run: lan down \(id)")
    }
    return LANHost(
      id: id, name: name, directory: directory, namespace: namespace, anchor: anchor,
      hostName: LabFiles.firstLine(directory + "/hostname") ?? "\(id)-\(name)",
      addresses: LANStateLayout.addresses(LabFiles.read(directory + "/addrs") ?? "").map { .init(segment: $0.segment, address: $0.address) },
      harness: executable)
  }

  /// A host's address on `segment` (its first segment by default).
  public func address(id: String, host: String, segment: Int? = nil) throws(LANError) -> String {
    try LANTopology.validateID(id)
    try LANTopology.validateHost(host)
    guard let text = LabFiles.read(LANStateLayout.hostDirectory(id, host) + "/addrs") else { throw .failed("LAN '\(id)' has no host '\(host)'") }
    let addresses = LANStateLayout.addresses(text)
    guard let segment else {
      guard let first = addresses.first else { throw .failed("host '\(host)' of LAN '\(id)' has no address") }
      return first.address
    }
    guard let found = addresses.first(where: { $0.segment == segment }) else {
      throw .failed("host '\(host)' is not on segment \(segment) of LAN '\(id)'")
    }
    return found.address
  }

  /// A host's mDNS host name (without `.local`).
  public func hostName(id: String, host: String) throws(LANError) -> String {
    try LANTopology.validateID(id)
    try LANTopology.validateHost(host)
    guard let name = LabFiles.firstLine(LANStateLayout.hostDirectory(id, host) + "/hostname") else {
      throw .failed("LAN '\(id)' has no host '\(host)'")
    }
    return name
  }

  /// The live anchor of a host: its PID, when that process lives in the host's namespace.
  static func anchor(directory: String, namespace: String) -> pid_t? {
    guard let text = LabFiles.firstLine(directory + "/anchor.pid"), let pid = pid_t(text), ProcessTable.isAlive(pid),
      ProcessTable.sameNamespace("/proc/\(pid)/ns/net", LANStateLayout.namespacePath(namespace))
    else { return nil }
    return pid
  }

  /// The namespaces of LAN `id` that exist now.
  func namespaces(of id: String) -> [String] {
    (LabFiles.list(LANStateLayout.namespaceDirectory) ?? []).filter { LANTopology.isNamespace($0, of: id) }.sorted()
  }

  /// Runs a tool (found in PATH or sbin) to completion.
  /// - Throws: ``LANError`` with its output when it fails.
  func run(_ tool: String, _ arguments: [String], environment: [String: String]? = nil) async throws(LANError) -> String {
    let command = [tools.path(tool)] + arguments
    trace(command)
    let result = await LabProcess.capture(command, environment: environment)
    guard result.code == 0 else {
      throw .failed("\(([tool] + arguments).joined(separator: " ")) failed (exit \(result.code)): \(result.output)")
    }
    return result.output
  }

  /// `NEARBY_LAN_DEBUG=1` shows every command the harness runs (on stderr, or appended to
  /// `NEARBY_LAN_DEBUG_FILE`).
  func trace(_ command: [String]) {
    guard environment["NEARBY_LAN_DEBUG"] == "1" else { return }
    let line = "lan+ " + command.joined(separator: " ") + "\n"
    if let file = environment["NEARBY_LAN_DEBUG_FILE"] {
      try? LabFiles.write(line, to: file, append: true)
    } else {
      OutputWriter.standardError.write(line)
    }
  }

  func remember(_ anchor: ChildProcess, lan id: String) {
    anchors.withLock { $0[id, default: []].append(anchor) }
  }

  /// The anchors this process started for LAN `id` (our children: their PIDs cannot have
  /// been reused). A failed `up` ends them by PID also while they are still setting up,
  /// before they are in the LAN's namespace.
  func anchorPIDs(of id: String) -> [pid_t] {
    anchors.withLock { ($0[id] ?? []).map(\.pid) }
  }

  /// Collects the exit status of the anchors this process started for LAN `id` (once dead).
  func reapAnchors(of id: String) async {
    let children = anchors.withLock { $0.removeValue(forKey: id) ?? [] }
    for child in children where !ProcessTable.isAlive(child.pid) { await child.wait() }
  }
}

/// The harness executable could not be found.
public struct LANHarnessNotFound: Error, Sendable, CustomStringConvertible {
  public var looked: [String]

  public var description: String {
    "cannot find the private-LAN harness nearby-lan (looked at: \(looked.joined(separator: "; "))): "
      + "build it next to nearby (swift build --product nearby-lan), or set NEARBY_LAN_SCRIPT=/path/to/nearby-lan"
  }
}
