import NearbySystem

#if canImport(Glibc)
  import Glibc
#endif

extension LoopbackHost {
  /// Tears the loopback host down, from inside it: the LANs built in it, any other namespace
  /// made in its private /run, whatever still runs in its network namespace, then the
  /// daemons (last, so that their clients do not report a lost daemon on the way out). All by
  /// PID, and only in the namespace recorded at setup — never the machine's.
  static func sweep(harness: LANHarness) async {
    let directory = LANStateLayout.loopbackDirectory
    // Nothing to do if setup did not get as far as recording the namespace.
    guard let recorded = LabFiles.firstLine(directory + "/netns") else { return }
    let own = NamespaceGuard.current()
    let machine = NamespaceGuard.machine(environment: harness.environment)
    guard let own, let machine, own != machine, recorded == own else {
      OutputWriter.standardError.line("lan: internal: refusing to sweep network namespace \(own ?? "?") (not this loopback's)")
      return
    }
    for id in harness.list() {
      do throws(LANError) {
        try await harness.down(id: id)
      } catch {
        OutputWriter.standardError.line("lan: " + error.message)
      }
    }
    for namespace in LabFiles.list(LANStateLayout.namespaceDirectory) ?? [] {
      let path = LANStateLayout.namespacePath(namespace)
      if ProcessTable.sameNamespace(path, "/proc/thread-self/ns/net") { continue }
      await ProcessTable.terminate(ProcessTable.processes(inNetworkNamespace: path), grace: harness.killGrace)
      _ = try? await harness.run("ip", ["netns", "del", namespace])
    }
    let daemons = ["avahi.pid", "dbus.pid"].compactMap { LabFiles.firstLine(directory + "/" + $0).flatMap { pid_t($0) } }
    let me = getpid()
    let others = ProcessTable.processes(inNetworkNamespace: "/proc/thread-self/ns/net").filter { $0 != me && !daemons.contains($0) }
    await ProcessTable.terminate(others, grace: harness.killGrace)
    // Only PIDs still in this namespace (a recorded PID may have been reused).
    await ProcessTable.terminate(
      daemons.filter { ProcessTable.sameNamespace("/proc/\($0)/ns/net", "/proc/thread-self/ns/net") }, grace: harness.killGrace)
  }

  /// The watchdog (`__loopback-watchdog PID`): waits while the supervisor `pid` lives, then
  /// sweeps — which only has work left when the supervisor was killed (SIGKILL) before its
  /// own sweep. SIGINT and SIGHUP are ignored; SIGTERM ends it.
  static func watch(_ pid: pid_t, harness: LANHarness, signals: AsyncStream<Int32>?) async -> Int32 {
    await withTaskGroup(of: Int32?.self) { group in
      if let signals {
        group.addTask {
          for await signal in signals where signal == SIGTERM { return 128 + SIGTERM }
          return nil
        }
      }
      group.addTask {
        while ProcessTable.isAlive(pid) {
          try? await Task.sleep(for: .seconds(1))
          if Task.isCancelled { return nil }
        }
        await sweep(harness: harness)
        return 0
      }
      var code: Int32 = 0
      for await result in group {
        if let result {
          code = result
          group.cancelAll()
        }
      }
      return code
    }
  }
}
