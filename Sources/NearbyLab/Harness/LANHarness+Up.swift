import CNearbySystem
import NearbySystem

#if canImport(Glibc)
  import Glibc
#endif

extension LANHarness {
  /// Builds LAN `id` (`lan up ID SEGMENT...`): a namespace per host and one for the bridges,
  /// veth links, addresses, an anchor process per host, and each host's dbus-daemon and
  /// avahi-daemon (started in parallel). A failed or cancelled `up` removes what it built.
  /// - Parameter segments: each `a,b` (see ``LANTopology``).
  /// - Returns: the plan it built.
  /// - Throws: ``LANError``: usage (a bad ID, host or segment), 2 or 3 when the harness
  ///   cannot run here, 1 when the LAN exists already or something failed.
  @discardableResult
  public func up(id: String, segments: [String]) async throws(LANError) -> LANTopology {
    let topology = try LANTopology(id: id, segments: segments)
    if let problem = await check() { throw problem }
    guard getuid() == 0 else { throw .failed("lan up needs root (inside `lan loopback` a user-namespace root is enough)") }
    let directory = LANStateLayout.lanDirectory(id)
    try LabFiles.makeDirectories(LANStateLayout.root)
    guard mkdir(directory, 0o755) == 0 else { throw .failed("LAN '\(id)' already exists (\(directory)); run: lan down \(id)") }
    let existing = namespaces(of: id)
    guard existing.isEmpty else {
      rmdir(directory)
      throw .failed("namespaces of LAN '\(id)' already exist (\(existing.joined(separator: " "))); run: lan down \(id)")
    }
    do {
      try await build(topology)
    } catch {
      try? await down(id: id)
      throw LANError(error.kind, "lan up \(id) failed (what it had built is removed): \(error.message)")
    }
    return topology
  }

  private func build(_ topology: LANTopology) async throws(LANError) {
    let directory = LANStateLayout.lanDirectory(topology.id)
    for file in LANStateLayout.lanFiles(topology) { try LabFiles.write(file.text, to: directory + "/" + file.name) }
    for host in topology.hosts {
      let hostDirectory = directory + "/" + host.name
      try LabFiles.makeDirectories(hostDirectory)
      for file in LANStateLayout.hostFiles(host) { try LabFiles.write(file.text, to: hostDirectory + "/" + file.name) }
    }
    try await batch(topology.namespaceCommands, file: directory + "/namespaces.batch")
    for namespace in topology.namespaces { try await disableIPv6(namespace) }
    try checkCancellation()
    try await batch(topology.bridgeCommands, file: directory + "/bridge.batch", namespace: topology.bridgeNamespace)
    for host in topology.hosts {
      try await batch(topology.hostCommands(host), file: directory + "/" + host.name + "/ip.batch", namespace: host.namespace)
    }
    try checkCancellation()
    try await startAnchors(topology)
    try checkCancellation()
    try await startDaemons(topology)
  }

  /// Runs `ip [-n NAMESPACE] -batch FILE` with `commands` (kept in FILE for the curious).
  private func batch(_ commands: [String], file: String, namespace: String? = nil) async throws(LANError) {
    try LabFiles.write(commands.joined(separator: "\n") + "\n", to: file)
    _ = try await run("ip", (namespace.map { ["-n", $0] } ?? []) + ["-batch", file])
  }

  /// IPv6 off in a namespace before its links exist: fewer packets, no duplicate address
  /// detection delays; avahi uses IPv4 only. (A kernel without IPv6 has nothing to turn off.)
  private func disableIPv6(_ namespace: String) async throws(LANError) {
    let path = LANStateLayout.namespacePath(namespace)
    for setting in ["all", "default"] {
      let file = "/proc/sys/net/ipv6/conf/\(setting)/disable_ipv6"
      let failure: Int32 = await BlockingCall.run { nearby_write_in_netns(path, file, "1") == 0 ? 0 : errno }
      guard failure == 0 || failure == ENOENT else {
        throw .failed("cannot turn IPv6 off in \(namespace) (\(file)): \(String(cString: strerror(failure)))")
      }
    }
  }

  /// Starts each host's anchor — a process in the host's network namespace with a mount
  /// namespace and /run of its own — and waits until every one is in place.
  private func startAnchors(_ topology: LANTopology) async throws(LANError) {
    for host in topology.hosts {
      let hostDirectory = LANStateLayout.hostDirectory(topology.id, host.name)
      let log = open(hostDirectory + "/anchor.log", O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
      guard log >= 0 else { throw .failed("cannot open \(hostDirectory)/anchor.log: \(String(cString: strerror(errno)))") }
      defer { close(log) }
      trace([executable, "__anchor", host.namespace, hostDirectory])
      do {
        let anchor = try ChildProcess(
          executable, ["__anchor", host.namespace, hostDirectory], environment: environment, standardInput: .null, standardOutput: .descriptor(log),
          standardError: .descriptor(log), newSession: true)
        remember(anchor, lan: topology.id)
      } catch {
        throw .failed("cannot start the anchor of host \(host.name) (\(executable)): \(error)")
      }
    }
    for host in topology.hosts {
      let hostDirectory = LANStateLayout.hostDirectory(topology.id, host.name)
      let ready = await ProcessTable.waitUntil(timeout) { Self.anchor(directory: hostDirectory, namespace: host.namespace) != nil }
      guard ready else {
        throw .failed(
          "anchor process of host \(host.name) did not come up within \(timeout.components.seconds)s\n" + LabFiles.tail(hostDirectory + "/anchor.log")
        )
      }
    }
  }

  /// Starts every host's dbus-daemon and avahi-daemon, all hosts at once, each from inside
  /// the host (`nearby-lan __start-daemons`, which asserts the namespace is private first).
  private func startDaemons(_ topology: LANTopology) async throws(LANError) {
    let failures = await withTaskGroup(of: String?.self) { group in
      for host in topology.hosts {
        group.addTask {
          do throws(LANError) {
            try await self.runInside(try self.host(id: topology.id, name: host.name), ["__start-daemons", host.directory(topology.id)])
            return nil
          } catch {
            return "host \(host.name): daemons failed to start:\n" + error.message.split(separator: "\n").map { "    " + $0 }.joined(separator: "\n")
          }
        }
      }
      var failures: [String] = []
      for await failure in group { if let failure { failures.append(failure) } }
      return failures
    }
    guard failures.isEmpty else { throw .failed(failures.sorted().joined(separator: "\n")) }
  }

  /// Runs `nearby-lan ARGUMENTS` inside `host` (its network and mount namespaces) to completion.
  /// - Throws: ``LANError`` with its output when it fails.
  func runInside(_ host: LANHost, _ arguments: [String]) async throws(LANError) {
    var variables = environment
    variables[NamespaceGuard.outerVariable] = NamespaceGuard.current() ?? ""
    let command = host.entering([executable] + arguments, nsenter: tools.path("nsenter"))
    trace(command)
    let result = await LabProcess.capture(command, environment: variables)
    guard result.code == 0 else { throw .failed(result.output.isEmpty ? "exit \(result.code)" : result.output) }
  }

  private func checkCancellation() throws(LANError) {
    if let signal = interruption { throw .failed("interrupted by signal \(signal)") }
    if Task.isCancelled { throw .failed("cancelled") }
  }
}

extension LANTopology.Host {
  /// The host's state directory.
  func directory(_ id: String) -> String { LANStateLayout.hostDirectory(id, name) }
}
