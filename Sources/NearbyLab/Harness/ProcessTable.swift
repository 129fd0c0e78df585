#if canImport(Glibc)
  import Glibc
#endif

/// What `/proc` says about processes, and ending them by PID.
///
/// Zombies count as dead: on some machines PID 1 reaps orphans only now and then.
enum ProcessTable {
  /// Whether `pid` is a live process (not a zombie).
  static func isAlive(_ pid: pid_t) -> Bool {
    guard pid > 0, let stat = LabFiles.read("/proc/\(pid)/stat"), let close = stat.lastIndex(of: ")") else { return false }
    let state = stat[stat.index(after: close)...].drop { $0 == " " }.first
    return state != nil && state != "Z"
  }

  /// The process's command name (`/proc/PID/comm`), or "" when it is gone.
  static func name(_ pid: pid_t) -> String {
    (LabFiles.read("/proc/\(pid)/comm") ?? "").split(separator: "\n").first.map(String.init) ?? ""
  }

  /// The parent's PID and the process group, session, terminal and the terminal's foreground
  /// group (fields 4 to 8 of `/proc/PID/stat`).
  static func status(_ pid: pid_t) -> (parent: pid_t, group: pid_t, session: pid_t, terminal: Int32, foregroundGroup: pid_t)? {
    guard let stat = LabFiles.read("/proc/\(pid)/stat"), let close = stat.lastIndex(of: ")") else { return nil }
    let fields = stat[stat.index(after: close)...].split(separator: " ").dropFirst()
    let numbers = fields.prefix(5).compactMap { Int32($0) }
    guard numbers.count == 5 else { return nil }
    return (numbers[0], numbers[1], numbers[2], numbers[3], numbers[4])
  }

  /// The identity of a namespace file (`/proc/PID/ns/net`, `/run/netns/NAME`): device and inode.
  static func identity(of path: String) -> (dev_t, ino_t)? {
    var info = stat()
    guard stat(path, &info) == 0 else { return nil }
    return (info.st_dev, info.st_ino)
  }

  /// Whether two namespace files are the same namespace.
  static func sameNamespace(_ a: String, _ b: String) -> Bool {
    guard let first = identity(of: a), let second = identity(of: b) else { return false }
    return first == second
  }

  /// The PIDs of every process.
  static func all() -> [pid_t] {
    (LabFiles.list("/proc") ?? []).compactMap { Int32($0) }
  }

  /// The PIDs of the processes in the network namespace at `path` (what `ip netns pids`
  /// prints).
  static func processes(inNetworkNamespace path: String) -> [pid_t] {
    guard let target = identity(of: path) else { return [] }
    return all().filter { pid in identity(of: "/proc/\(pid)/ns/net").map { $0 == target } ?? false }
  }

  /// Ends `pids`: SIGTERM, up to `grace` to exit, then SIGKILL and up to 2 s more.
  /// - Returns: the PIDs still alive after all that.
  @discardableResult
  static func terminate(_ pids: [pid_t], grace: Duration) async -> [pid_t] {
    let alive = pids.filter { $0 > 0 && isAlive($0) }
    guard !alive.isEmpty else { return [] }
    for pid in alive { _ = kill(pid, SIGTERM) }
    if await waitUntil(grace, { alive.allSatisfy { !isAlive($0) } }) { return [] }
    for pid in alive where isAlive(pid) { _ = kill(pid, SIGKILL) }
    _ = await waitUntil(.seconds(2)) { alive.allSatisfy { !isAlive($0) } }
    return alive.filter(isAlive)
  }

  /// Polls `condition` every 50 ms until it holds or `limit` passes (then once more).
  /// - Returns: whether it held.
  static func waitUntil(_ limit: Duration, _ condition: () -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + limit
    while ContinuousClock.now < deadline {
      if condition() { return true }
      await pause(.milliseconds(50))
    }
    return condition()
  }

  /// Sleeps for `duration`, also in a cancelled task (where `Task.sleep` returns at once):
  /// waits during a teardown must really wait.
  static func pause(_ duration: Duration) async {
    if !Task.isCancelled {
      try? await Task.sleep(for: duration)
      if !Task.isCancelled { return }
    }
    let microseconds = UInt32(duration.components.seconds * 1_000_000 + duration.components.attoseconds / 1_000_000_000_000)
    await BlockingCall.run { usleep(microseconds) }
  }
}
