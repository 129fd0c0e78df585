#if canImport(Glibc)
  import Glibc
#endif

/// Finds the programs the harness runs (`ip`, `nsenter`, the daemons) in `PATH` and in the
/// sbin directories, which a non-root `PATH` lacks.
struct ToolPaths: Sendable {
  /// What the harness needs on a machine: always, and with Avahi.
  static let base = ["ip", "dbus-daemon"]
  static let withAvahi = ["ip", "nsenter", "dbus-daemon", "avahi-daemon", "sleep"]
  static let selfTest = withAvahi + ["avahi-browse", "avahi-publish", "getent"]

  let directories: [String]

  init(environment: [String: String]) {
    let path = environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
    var directories = path.split(separator: ":").map(String.init).filter { !$0.isEmpty }
    for extra in ["/usr/sbin", "/sbin", "/usr/bin", "/bin"] where !directories.contains(extra) { directories.append(extra) }
    self.directories = directories
  }

  /// The absolute path of `name`, or nil when no directory has it.
  func find(_ name: String) -> String? {
    if name.contains("/") { return access(name, X_OK) == 0 ? name : nil }
    return directories.lazy.map { $0 + "/" + name }.first { access($0, X_OK) == 0 }
  }

  /// The absolute path of `name`, or the bare name (the error then names it).
  func path(_ name: String) -> String { find(name) ?? name }

  /// The tools of `names` that cannot be found.
  func missing(_ names: [String]) -> [String] { names.filter { find($0) == nil } }

  /// Fails with exit code 3 unless every tool of `names` is installed.
  func require(_ names: [String]) throws(LANError) {
    let absent = missing(names)
    guard absent.isEmpty else { throw LANError(.toolsMissing, "missing tools: \(absent.joined(separator: " ")) (run scripts/install-deps)") }
  }
}
