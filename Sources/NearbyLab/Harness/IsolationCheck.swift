import CNearbySystem

#if canImport(Glibc)
  import Glibc
#endif

/// Whether the harness can run here (`lan check`): the facts, and the verdict on them.
///
/// Private namespaces need root or unprivileged user namespaces; avahi-daemon needs real
/// root (it chowns /run/avahi-daemon to the avahi user, which a user namespace cannot do),
/// so without root only `lan loopback --no-avahi` works.
public struct IsolationCheck: Sendable, Equatable {
  public var isRoot: Bool
  /// A child could unshare a network and a mount namespace (with a user namespace when not root).
  public var canUnshare: Bool
  /// PID 1's or kthreadd's network namespace is readable (the reference of the safety check).
  public var machineNamespaceKnown: Bool
  /// The tools that are needed and missing.
  public var missingTools: [String]

  public init(isRoot: Bool, canUnshare: Bool, machineNamespaceKnown: Bool, missingTools: [String]) {
    self.isRoot = isRoot
    self.canUnshare = canUnshare
    self.machineNamespaceKnown = machineNamespaceKnown
    self.missingTools = missingTools
  }

  /// What a non-root user cannot do, and what to do.
  public static let avahiNeedsRoot =
    "avahi-daemon cannot run in an unprivileged user namespace (it must chown /run/avahi-daemon to the avahi user): run as root / with sudo; without root only `lan loopback --no-avahi` works"

  public static let cannotIsolate = """
    the private-LAN harness needs root (or unprivileged user namespaces) to
         create network namespaces: run as root / with sudo (e.g. `sudo scripts/lan ...`),
         or enable user namespaces (sysctl kernel.unprivileged_userns_clone=1 /
         user.max_user_namespaces > 0).  Tests that need real avahi cannot run here.
    """

  /// The verdict: nil when the harness can run, else why not (exit 2 or 3).
  /// - Parameter noAvahi: only `lan loopback --no-avahi` is wanted.
  public func verdict(noAvahi: Bool) -> LANError? {
    guard canUnshare else { return LANError(.cannotIsolate, Self.cannotIsolate) }
    if !isRoot && !noAvahi { return LANError(.cannotIsolate, "user namespaces work here, but " + Self.avahiNeedsRoot) }
    if isRoot && !machineNamespaceKnown {
      return LANError(.cannotIsolate, "cannot determine the machine's own network namespace (PID 1 and kthreadd unreadable)")
    }
    guard missingTools.isEmpty else {
      return LANError(
        .toolsMissing, "isolation is possible, but tools are missing: \(missingTools.joined(separator: " ")) (run scripts/install-deps)")
    }
    return nil
  }

  /// The namespaces `unshare` needs to make a private host here.
  static var unshareFlags: Int32 {
    getuid() == 0 ? NEARBY_CLONE_NEWNET | NEARBY_CLONE_NEWNS : NEARBY_CLONE_NEWUSER | NEARBY_CLONE_NEWNET | NEARBY_CLONE_NEWNS
  }

  /// Looks at this machine (a child process tries the unshare).
  /// - Parameters:
  ///   - tools: the tools that must be installed.
  static func here(environment: [String: String], tools: [String]) async -> IsolationCheck {
    let flags = unshareFlags
    let canUnshare = await BlockingCall.run { nearby_probe_unshare(flags) } == 1
    return IsolationCheck(
      isRoot: getuid() == 0, canUnshare: canUnshare,
      machineNamespaceKnown: NamespaceGuard.machine(environment: environment) != nil,
      missingTools: ToolPaths(environment: environment).missing(tools))
  }
}

extension LANHarness {
  /// Whether the harness can run here (`lan check`).
  /// - Parameter noAvahi: only `lan loopback --no-avahi` is wanted.
  /// - Returns: nil when it can; otherwise why not, with exit code 2 (cannot isolate) or 3
  ///   (tools missing).
  public func check(noAvahi: Bool = false) async -> LANError? {
    let tools = noAvahi ? ToolPaths.base : ToolPaths.withAvahi + ["avahi-browse", "avahi-publish"]
    return await IsolationCheck.here(environment: environment, tools: tools).verdict(noAvahi: noAvahi)
  }
}
