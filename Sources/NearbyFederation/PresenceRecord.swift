import NearbyCore

/// A peer's entry in the presence bucket (`nearby-presence`, key `peer.<id>`): who it is,
/// its key, and where it is. The relay it is connected to writes it, and rewrites it while
/// the peer stays (so an entry that stops being refreshed means the site went away).
///
/// The value is a few lines of text, readable with `nats kv get nearby-presence peer.<id>`:
///
/// ```
/// nearby-presence 1
/// id 933af21c0e5a6d8b2f4c7e9a1b3d5f70
/// name alice
/// key 6f1c...(64 hex digits: the Ed25519 public key, which owns the id)
/// site hq
/// relay 5e6f7a8b...(the relay's peer id)
/// state online
/// ```
///
/// Nothing in it is trusted without checking: every relay checks that the key owns the id
/// before using an entry, so a writer to the bucket can hide a peer but not impersonate one.
public struct PresenceRecord: Hashable, Sendable {
  public var peer: Peer
  public var publicKey: [UInt8]
  public var site: String
  /// The relay the peer is (or was last) connected to.
  public var relay: PeerID
  /// Connected now; `false`: it left, and messages to it are kept.
  public var isOnline: Bool

  public init(peer: Peer, publicKey: [UInt8], site: String, relay: PeerID, isOnline: Bool) {
    self.peer = peer
    self.publicKey = publicKey
    self.site = site
    self.relay = relay
    self.isOnline = isOnline
  }

  static let magic = "nearby-presence 1"

  /// The bucket key of a peer.
  public static func key(_ id: PeerID) -> String { "peer.\(id.hex)" }

  /// The peer id in a bucket key, if it is one.
  public static func peerID(key: String) -> PeerID? {
    guard key.hasPrefix("peer.") else { return nil }
    return PeerID(hex: String(key.dropFirst(5)))
  }

  /// The value stored in the bucket.
  public var encoded: [UInt8] {
    let lines = [
      Self.magic, "id \(peer.id.hex)", "name \(peer.name.value)", "key \(Self.hex(publicKey))", "site \(site)", "relay \(relay.hex)",
      "state \(isOnline ? "online" : "offline")",
    ]
    return Array((lines.joined(separator: "\n") + "\n").utf8)
  }

  /// Reads a value. - Returns: `nil` when it is not a presence record (another format, a
  /// missing or invalid field); unknown lines are ignored.
  public init?(_ value: [UInt8]) {
    guard let text = String(validating: value, as: UTF8.self) else { return nil }
    let lines = text.split(separator: "\n", omittingEmptySubsequences: true)
    guard lines.first == Self.magic[...] else { return nil }
    var fields: [Substring: Substring] = [:]
    for line in lines.dropFirst() {
      guard let space = line.firstIndex(of: " ") else { continue }
      let name = line[..<space]
      if fields[name] == nil { fields[name] = line[line.index(after: space)...] }
    }
    guard let idText = fields["id"], let id = PeerID(hex: String(idText)), id.isValid,
      let nameText = fields["name"], let name = try? DisplayName(String(nameText)),
      let keyText = fields["key"], let key = Self.bytes(hex: keyText), key.count == 32,
      let site = fields["site"].map(String.init), PeerSite.isValidName(site),
      let relayText = fields["relay"], let relay = PeerID(hex: String(relayText)),
      let state = fields["state"], state == "online" || state == "offline"
    else { return nil }
    self.init(peer: Peer(id: id, name: name), publicKey: key, site: site, relay: relay, isOnline: state == "online")
  }

  static func hex(_ bytes: [UInt8]) -> String {
    let digits = Array("0123456789abcdef".utf8)
    var out: [UInt8] = []
    out.reserveCapacity(bytes.count * 2)
    for byte in bytes {
      out.append(digits[Int(byte >> 4)])
      out.append(digits[Int(byte & 0x0F)])
    }
    return String(decoding: out, as: UTF8.self)
  }

  static func bytes(hex text: Substring) -> [UInt8]? {
    let utf8 = Array(text.utf8)
    guard utf8.count % 2 == 0 else { return nil }
    func nibble(_ c: UInt8) -> UInt8? {
      switch c {
      case 0x30...0x39: c - 0x30
      case 0x61...0x66: c - 0x61 + 10
      case 0x41...0x46: c - 0x41 + 10
      default: nil
      }
    }
    var out: [UInt8] = []
    out.reserveCapacity(utf8.count / 2)
    var index = 0
    while index < utf8.count {
      guard let high = nibble(utf8[index]), let low = nibble(utf8[index + 1]) else { return nil }
      out.append(high << 4 | low)
      index += 2
    }
    return out
  }
}
