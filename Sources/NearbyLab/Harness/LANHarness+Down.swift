#if canImport(Glibc)
  import Glibc
#endif

extension LANHarness {
  /// Tears LAN `id` down (`lan down ID`): ends every process inside its namespaces by PID
  /// (SIGTERM, then SIGKILL), deletes the namespaces and the state. Safe on a missing or
  /// half-built LAN, and twice.
  /// - Throws: ``LANError`` when a namespace could not be deleted, or would be our own.
  public func down(id: String) async throws(LANError) {
    try LANTopology.validateID(id)
    let namespaces = namespaces(of: id)
    var pids: [pid_t] = []
    for namespace in namespaces {
      let path = LANStateLayout.namespacePath(namespace)
      // Never touch the namespace we run in, let alone the machine's.
      if ProcessTable.sameNamespace(path, "/proc/thread-self/ns/net") {
        throw .failed("refusing to tear down \(namespace): it is this process's own network namespace")
      }
      pids += ProcessTable.processes(inNetworkNamespace: path)
    }
    let survivors = await ProcessTable.terminate(Array(Set(pids + anchorPIDs(of: id))), grace: killGrace)
    await reapAnchors(of: id)
    var problems: [String] = survivors.isEmpty ? [] : ["processes did not exit: \(survivors.map(String.init).joined(separator: " "))"]
    for namespace in namespaces {
      do throws(LANError) {
        _ = try await run("ip", ["netns", "del", namespace])
      } catch {
        problems.append("could not delete namespace \(namespace): \(error.message)")
      }
    }
    LabFiles.removeTree(LANStateLayout.lanDirectory(id))
    guard problems.isEmpty else { throw .failed(problems.joined(separator: "\n")) }
  }

  /// What `lan avahi` does to a host's avahi-daemon (`restart`: stop, then start).
  /// - Returns: for `status`, `running PID` or nil (stopped); nil otherwise.
  /// - Throws: ``LANError`` when the host is missing or the daemon does not start or die.
  @discardableResult
  public func avahi(_ target: LANCommand.AvahiTarget, _ action: LANCommand.AvahiAction) async throws(LANError) -> String? {
    let directory: String
    let namespace: String
    let root: String
    var host: LANHost?
    switch target {
    case .loopback:
      guard LabFiles.firstLine(LANStateLayout.loopbackDirectory + "/netns") == NamespaceGuard.current() else {
        throw .failed("lan avahi loopback: not inside `lan loopback`")
      }
      (directory, namespace, root) = (LANStateLayout.loopbackDirectory, "/proc/thread-self/ns/net", "")
    case .host(let id, let name):
      let found = try self.host(id: id, name: name)
      host = found
      (directory, namespace, root) = (found.directory, LANStateLayout.namespacePath(found.namespace), "/proc/\(found.anchor)/root")
    }
    let pid = HostDaemons.avahiPID(directory: directory, namespace: namespace, root: root)
    switch action {
    case .status:
      return pid.map { "running \($0)" }
    case .stop, .restart:
      if let pid { await ProcessTable.terminate([pid], grace: killGrace) }
      if action == .restart { try await startAvahi(directory: directory, host: host) }
    case .kill:
      guard let pid else { return nil }
      _ = kill(pid, SIGKILL)
      guard await ProcessTable.waitUntil(timeout, { !ProcessTable.isAlive(pid) }) else { throw .failed("avahi-daemon \(pid) survived SIGKILL") }
    case .start:
      if pid == nil { try await startAvahi(directory: directory, host: host) }
    }
    return nil
  }

  /// Starts the avahi-daemon of a host (from inside it), or of the loopback host we are in.
  private func startAvahi(directory: String, host: LANHost?) async throws(LANError) {
    if let host {
      try await runInside(host, ["__start-avahi", directory])
    } else {
      try await HostDaemons(directory: directory, environment: environment, timeout: timeout).startAvahi()
    }
  }
}
