/// A running host of a LAN built by ``LANHarness/up(id:segments:)``, and how to run a
/// command inside it.
///
/// Commands enter the host through its anchor (a process that only holds the host's network
/// and mount namespaces) with `nsenter`, so a host stays enterable while its avahi-daemon is
/// stopped. `nsenter` without `-p` does not fork: the command replaces it, so its stdio, TTY,
/// signals and exit status are the command's own.
public struct LANHost: Sendable, Equatable {
  /// An address of the host on one segment.
  public struct Address: Sendable, Equatable {
    public var segment: Int
    public var address: String

    public init(segment: Int, address: String) {
      self.segment = segment
      self.address = address
    }
  }

  public let id: String
  public let name: String
  /// Its state directory (`/run/nearby-lan/ID/HOST`).
  public let directory: String
  /// Its network namespace's name (`nb-ID-HOST`).
  public let namespace: String
  /// The PID of its anchor.
  public let anchor: Int32
  /// Its mDNS host name, without `.local`.
  public let hostName: String
  public let addresses: [Address]
  /// The harness executable that commands in the host can call (`NEARBY_LAN_SCRIPT`).
  public let harness: String

  public init(
    id: String, name: String, directory: String, namespace: String, anchor: Int32, hostName: String, addresses: [Address], harness: String
  ) {
    self.id = id
    self.name = name
    self.directory = directory
    self.namespace = namespace
    self.anchor = anchor
    self.hostName = hostName
    self.addresses = addresses
    self.harness = harness
  }

  /// The variables every command in the host gets: `NEARBY_LAN=ID`, `NEARBY_LAN_HOST`,
  /// `NEARBY_LAN_HOSTNAME`, `NEARBY_LAN_ADDR` (its first address), `NEARBY_AVAHI=1` and
  /// `NEARBY_LAN_SCRIPT`.
  public var variables: [String: String] {
    [
      "NEARBY_LAN": id, "NEARBY_LAN_HOST": name, "NEARBY_LAN_HOSTNAME": hostName, "NEARBY_LAN_ADDR": addresses.first?.address ?? "",
      "NEARBY_AVAHI": "1", "NEARBY_LAN_SCRIPT": harness,
    ]
  }

  /// The command line that runs `command` inside the host.
  /// - Parameters:
  ///   - nsenter: the path of `nsenter`.
  ///   - workingDirectory: kept inside (entering a mount namespace resets it to /; the
  ///     directory is opened before the switch, so it works even where the host's /run
  ///     hides it).
  public func entering(_ command: [String], nsenter: String = "nsenter", workingDirectory: String? = nil) -> [String] {
    [nsenter, "-t", String(anchor), "-n", "-m"] + (workingDirectory.map { ["--wd=\($0)"] } ?? []) + ["--"] + command
  }

  /// The environment of a command in the host: `base`, the host's ``variables``, then `extra`.
  public func environment(_ base: [String: String], extra: [String: String] = [:]) -> [String: String] {
    base.merging(variables) { $1 }.merging(extra) { $1 }
  }
}
