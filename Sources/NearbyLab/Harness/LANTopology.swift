/// The plan of a multi-host LAN (`lan up ID SEGMENT...`): which hosts exist, which segments
/// each is on, and every name and address the harness gives them.
///
/// Pure: it decides the network namespaces (`nb-ID-HOST`, and `nbbr-ID` holding one bridge
/// per segment), the veth pairs (`sS-hN` on the bridge side, `segS` in the host), the
/// addresses (`10.77.S.N/24`, N = the host's position in order of first mention) and the
/// `ip -batch` commands that build it.
public struct LANTopology: Sendable, Equatable {
  /// A host's link to one segment.
  public struct Link: Sendable, Equatable {
    /// The segment's number, from 1.
    public var segment: Int
    /// The interface inside the host (`segS`).
    public var interface: String
    /// The other end of the veth pair, in the bridge namespace (`sS-hN`).
    public var bridgePort: String
    /// The host's IPv4 address on the segment, without the prefix length.
    public var address: String
  }

  /// One host of the LAN.
  public struct Host: Sendable, Equatable {
    public var name: String
    /// The position in order of first mention, from 1 (the last byte of its addresses).
    public var index: Int
    /// Its network namespace (`nb-ID-HOST`).
    public var namespace: String
    /// Its mDNS host name, without `.local` (`ID-HOST`).
    public var hostName: String
    public var links: [Link]
  }

  /// The addresses are `prefix.SEGMENT.HOST`.
  public static let addressPrefix = "10.77"

  public let id: String
  /// The hosts of each segment, in the order given.
  public let segments: [[String]]
  public let hosts: [Host]

  /// The namespace that holds the bridges.
  public var bridgeNamespace: String { Self.bridgeNamespace(id) }

  /// Plans LAN `id` from segments written as `a,b`.
  /// - Throws: ``LANError`` (usage) naming the bad ID, host or segment.
  public init(id: String, segments values: [String]) throws(LANError) {
    try Self.validateID(id)
    guard !values.isEmpty else { throw .usage("usage: lan up ID SEGMENT [SEGMENT...]") }
    guard values.count <= 250 else { throw .usage("too many segments (max 250)") }
    var segments: [[String]] = []
    var order: [String] = []
    for (position, value) in values.enumerated() {
      let members = value.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
      guard !value.isEmpty, !members.contains("") else { throw .usage("bad segment '\(value)' (expected e.g. a,b)") }
      for (offset, member) in members.enumerated() {
        try Self.validateHost(member)
        if members[..<offset].contains(member) { throw .usage("host \(member) appears twice in segment \(position + 1)") }
        if !order.contains(member) { order.append(member) }
      }
      segments.append(members)
    }
    guard order.count <= 254 else { throw .usage("too many hosts (max 254)") }
    self.id = id
    self.segments = segments
    hosts = order.enumerated().map { offset, name in
      let index = offset + 1
      let links = segments.enumerated().compactMap { number, members -> Link? in
        guard members.contains(name) else { return nil }
        let segment = number + 1
        return Link(
          segment: segment, interface: "seg\(segment)", bridgePort: "s\(segment)-h\(index)", address: "\(Self.addressPrefix).\(segment).\(index)")
      }
      return Host(name: name, index: index, namespace: Self.hostNamespace(id, name), hostName: "\(id)-\(name)", links: links)
    }
  }

  /// The host called `name`, if there is one.
  public func host(_ name: String) -> Host? { hosts.first { $0.name == name } }

  /// Every namespace of the LAN: the bridge's first, then the hosts'.
  public var namespaces: [String] { [bridgeNamespace] + hosts.map(\.namespace) }

  /// `ip -batch` lines that create the namespaces.
  public var namespaceCommands: [String] { namespaces.map { "netns add \($0)" } }

  /// `ip -n BRIDGE-NAMESPACE -batch` lines: the bridges, and every veth pair (the host's end
  /// moved into the host's namespace).
  public var bridgeCommands: [String] {
    var lines = ["link set lo up"]
    for segment in segments.indices.map({ $0 + 1 }) {
      lines.append("link add br\(segment) type bridge stp_state 0 mcast_snooping 0")
      lines.append("link set br\(segment) up")
    }
    for host in hosts {
      for link in host.links {
        lines.append("link add \(link.bridgePort) type veth peer name \(link.interface) netns \(host.namespace)")
        lines.append("link set \(link.bridgePort) master br\(link.segment) up")
      }
    }
    return lines
  }

  /// `ip -n HOST-NAMESPACE -batch` lines: loopback up, addresses, links up with multicast.
  public func hostCommands(_ host: Host) -> [String] {
    ["link set lo up"]
      + host.links.flatMap { link in
        ["addr add \(link.address)/24 dev \(link.interface)", "link set \(link.interface) multicast on up"]
      }
  }

  /// Host names become namespace and mDNS names; no '-', so the last '-' of `nb-ID-HOST`
  /// separates the ID and the host.
  public static func validateHost(_ name: String) throws(LANError) {
    guard (1...24).contains(name.count), name.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber) }) else {
      throw .usage("bad host name '\(name)': use 1-24 letters and digits")
    }
  }

  /// 1-32 letters, digits and '-' (not at either end); `loopback` is reserved.
  public static func validateID(_ id: String) throws(LANError) {
    let valid =
      (1...32).contains(id.count) && id.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-") } && id.first != "-"
      && id.last != "-"
    guard valid else { throw .usage("bad LAN ID '\(id)': use 1-32 letters, digits and '-' (not at either end)") }
    guard id != "loopback" else { throw .usage("'loopback' is reserved") }
  }

  public static func hostNamespace(_ id: String, _ host: String) -> String { "nb-\(id)-\(host)" }
  public static func bridgeNamespace(_ id: String) -> String { "nbbr-\(id)" }

  /// Whether the namespace called `name` belongs to LAN `id` (`nbbr-ID`, or `nb-ID-HOST`
  /// with a valid HOST: LAN `a` does not claim LAN `a-b`'s namespaces).
  public static func isNamespace(_ name: String, of id: String) -> Bool {
    if name == bridgeNamespace(id) { return true }
    let prefix = "nb-\(id)-"
    guard name.hasPrefix(prefix) else { return false }
    let host = name.dropFirst(prefix.count)
    return !host.isEmpty && host.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber) }
  }
}
