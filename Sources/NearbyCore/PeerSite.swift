/// Where a peer behind federated relays is (PROTOCOL.md 9.6): the site whose relay it is
/// connected to, or the site it was last seen at while it is offline (messages to it are then
/// kept until it connects again, at any site).
public struct PeerSite: Hashable, Sendable, CustomStringConvertible {
  /// The site's name as its relay was started with (`nearby relay --site NAME`); empty when
  /// the relay did not say.
  public let name: String
  /// Connected to a relay of the federation now; `false`: offline, and messages to it wait.
  public let isOnline: Bool

  public init(name: String, isOnline: Bool) {
    self.name = name
    self.isOnline = isOnline
  }

  /// The most UTF-8 bytes a site name has.
  public static let maximumByteCount = 63

  /// Whether `name` can travel in a roster: 0–63 bytes of UTF-8 without control or other
  /// hidden characters (as display names, PROTOCOL.md 2.3).
  public static func isValidName(_ name: String) -> Bool {
    name.utf8.count <= maximumByteCount && HiddenCharacters.first(in: name) == nil
  }

  /// `site1`, or `offline (last at site1)`.
  public var description: String {
    let place = name.isEmpty ? "another site" : name
    return isOnline ? place : "offline (last at \(place))"
  }
}
