#if canImport(Glibc)
  import Glibc
#endif

/// The safety rule of the harness: no daemon ever starts in the machine's own network
/// namespace. ``assertPrivate(environment:)`` runs before every daemon start.
enum NamespaceGuard {
  /// The variable that carries the namespace `nearby-lan` was started in across the unshare:
  /// the fallback reference when neither PID 1's nor kthreadd's namespace can be read.
  static let outerVariable = "NEARBY_LAN_OUTER_NETNS"

  /// The calling thread's network namespace, e.g. `net:[4026531833]`.
  static func current() -> String? { link("/proc/thread-self/ns/net") ?? link("/proc/self/ns/net") }

  /// The machine's own (initial) network namespace: PID 1's; where PID 1 is unreadable even
  /// for root (sandboxes with a non-dumpable init), kthreadd's (kernel threads live in the
  /// initial namespaces; it is PID 2 with parent 0 unless we are in a PID namespace); in
  /// user-namespace runs, the one recorded before the unshare.
  static func machine(environment: [String: String]) -> String? {
    if let own = link("/proc/1/ns/net") { return own }
    if ProcessTable.name(2) == "kthreadd", ProcessTable.status(2)?.parent == 0, let kernel = link("/proc/2/ns/net") { return kernel }
    if let outer = environment[outerVariable], !outer.isEmpty { return outer }
    return nil
  }

  /// Whether the machine's namespace can be determined without the recorded fallback.
  static var machineIsKnown: Bool { machine(environment: [:]) != nil }

  /// Throws unless this thread is in a network namespace other than the machine's.
  static func assertPrivate(environment: [String: String]) throws(LANError) {
    guard let own = current() else { throw .failed("cannot read /proc/self/ns/net") }
    guard let machine = machine(environment: environment) else {
      throw .failed("cannot determine the machine's own network namespace (PID 1's is unreadable); refusing to start daemons")
    }
    guard own != machine else {
      throw .failed("refusing to start daemons: this process is in the machine's own network namespace (\(own))")
    }
  }

  static func link(_ path: String) -> String? {
    var buffer = [CChar](repeating: 0, count: 256)
    let count = readlink(path, &buffer, buffer.count - 1)
    guard count > 0 else { return nil }
    return String(decoding: buffer[0..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
  }
}
