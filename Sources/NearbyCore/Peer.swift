/// A peer as people see it: its stable id, its current display name, and the discovery
/// info it publishes (empty until it is found through DNS-SD).
///
/// Two values are equal when id and name are: the info is what the peer says about itself
/// and may change while it stays the same peer.
public struct Peer: Hashable, Sendable, Identifiable, CustomStringConvertible {
  public let id: PeerID
  public let name: DisplayName
  /// The key/value pairs of its TXT record (empty for a peer not found through DNS-SD).
  public var info: DiscoveryInfo

  public init(id: PeerID, name: DisplayName, info: DiscoveryInfo = DiscoveryInfo()) {
    self.id = id
    self.name = name
    self.info = info
  }

  /// `name (1a2b3c4d)`: the name alone is not unique.
  public var description: String { "\(name.value) (\(id.shortHex))" }

  public static func == (lhs: Peer, rhs: Peer) -> Bool { lhs.id == rhs.id && lhs.name == rhs.name }

  public func hash(into hasher: inout Hasher) {
    hasher.combine(id)
    hasher.combine(name)
  }

  /// The same peer with a new name (what it said in a HELLO or a roster), keeping its info.
  package func renamed(_ newName: DisplayName) -> Peer { Peer(id: id, name: newName, info: info) }
}
