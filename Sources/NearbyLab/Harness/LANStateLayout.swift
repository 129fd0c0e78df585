/// Where the harness keeps what it knows about its LANs, and the format of those files.
///
/// `/run/nearby-lan/ID/` holds `hosts` (one name per line) and `segments` (`S a b` per
/// line); `/run/nearby-lan/ID/HOST/` holds `netns`, `index`, `hostname`, `ifaces`
/// (`seg1,seg2`), `addrs` (`S 10.77.S.N` per line), the PIDs (`anchor.pid`, `dbus.pid`,
/// `avahi.pid`), the daemons' configurations and logs (`avahi.log`, `dbus.log`,
/// `anchor.log`). Inside `lan loopback` that /run is the loopback's private tmpfs, so LANs
/// built there are invisible outside and vanish with it. The loopback host keeps its own
/// state in `/run/nearby-loopback/`.
public enum LANStateLayout {
  public static let root = "/run/nearby-lan"
  public static let loopbackDirectory = "/run/nearby-loopback"
  /// Where `ip netns add` puts its namespace files.
  public static let namespaceDirectory = "/run/netns"

  public static func lanDirectory(_ id: String) -> String { root + "/" + id }
  public static func hostDirectory(_ id: String, _ host: String) -> String { root + "/" + id + "/" + host }
  public static func namespacePath(_ name: String) -> String { namespaceDirectory + "/" + name }

  /// The files of the LAN's directory, by name.
  public static func lanFiles(_ topology: LANTopology) -> [(name: String, text: String)] {
    [
      ("hosts", topology.hosts.map { $0.name + "\n" }.joined()),
      ("segments", topology.segments.enumerated().map { "\($0.offset + 1) \($0.element.joined(separator: " "))\n" }.joined()),
    ]
  }

  /// The files that describe a host, by name.
  public static func hostFiles(_ host: LANTopology.Host) -> [(name: String, text: String)] {
    [
      ("netns", host.namespace + "\n"),
      ("index", "\(host.index)\n"),
      ("hostname", host.hostName + "\n"),
      ("ifaces", host.links.map(\.interface).joined(separator: ",") + "\n"),
      ("addrs", host.links.map { "\($0.segment) \($0.address)\n" }.joined()),
    ]
  }

  /// The `addrs` file read back: each segment number with the host's address on it.
  public static func addresses(_ text: String) -> [(segment: Int, address: String)] {
    text.split(separator: "\n").compactMap { line in
      let fields = line.split(separator: " ")
      guard fields.count == 2, let segment = Int(fields[0]) else { return nil }
      return (segment, String(fields[1]))
    }
  }

  /// The `segments` file read back: the hosts of each segment, in order.
  public static func segments(_ text: String) -> [[String]] {
    text.split(separator: "\n").map { line in line.split(separator: " ").dropFirst().map(String.init) }
  }
}
