/// A peer as people see it: its stable id and its current display name.
public struct Peer: Hashable, Sendable, CustomStringConvertible {
  public let id: PeerID
  public let name: DisplayName

  public init(id: PeerID, name: DisplayName) {
    self.id = id
    self.name = name
  }

  /// `name (1a2b3c4d)`: the name alone is not unique.
  public var description: String { "\(name.value) (\(id.shortHex))" }
}
