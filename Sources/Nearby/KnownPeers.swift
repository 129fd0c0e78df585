import NearbyCore
import NearbyCrypto

/// A peer this identity has had a session with, as remembered in the state directory's
/// `known-peers` file: trust on first use, and the mark of a person who compared codes.
public struct KnownPeer: Hashable, Sendable {
  public let id: PeerID
  /// The Ed25519 public key the handshake proved (it owns ``id``), as 64 hex digits.
  public let publicKey: String
  /// The name it used last.
  public var name: DisplayName
  /// When it was first seen, in seconds since the Unix epoch.
  public let firstSeen: UInt64
  /// The person compared the verification code and confirmed it.
  public var isVerified: Bool

  package init(id: PeerID, publicKey: String, name: DisplayName, firstSeen: UInt64, isVerified: Bool) {
    self.id = id
    self.publicKey = publicKey
    self.name = name
    self.firstSeen = firstSeen
    self.isVerified = isVerified
  }

  var peer: Peer { Peer(id: id, name: name) }
}

/// The text of the known-peers file: a version line, then one line per peer:
/// `ID KEY FIRST-SEEN verified|unverified NAME` (the name is the rest of the line).
enum KnownPeersFile {
  static let name = "known-peers"
  static let versionLine = "nearby-known-peers 1"

  static func encode(_ peers: [KnownPeer]) -> String {
    var text = "# Nearby known peers: who this identity has met, and whom its person verified.\n"
    text += "# id public-key first-seen(unix) verified|unverified name\n"
    text += versionLine + "\n"
    for peer in peers.sorted(by: { $0.firstSeen == $1.firstSeen ? $0.id < $1.id : $0.firstSeen < $1.firstSeen }) {
      text += "\(peer.id.hex) \(peer.publicKey) \(peer.firstSeen) \(peer.isVerified ? "verified" : "unverified") \(peer.name.value)\n"
    }
    return text
  }

  /// - Throws: ``KnownPeersError`` naming the line; nothing is ever skipped silently, since a
  ///   dropped line would make a verified peer look new.
  static func decode(_ text: String, path: String) throws(KnownPeersError) -> [KnownPeer] {
    var peers: [KnownPeer] = []
    var seen = Set<PeerID>()
    var sawVersion = false
    for (index, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
      let line = raw.hasSuffix("\r") ? raw.dropLast() : raw
      let number = index + 1
      if line.allSatisfy({ $0 == " " || $0 == "\t" }) || line.hasPrefix("#") { continue }
      guard sawVersion else {
        guard line == versionLine else { throw .notAKnownPeersFile(path, line: number) }
        sawVersion = true
        continue
      }
      let fields = line.split(separator: " ", maxSplits: 4, omittingEmptySubsequences: false)
      guard fields.count == 5 else { throw .malformed(path, line: number, "expected 'ID KEY FIRST-SEEN verified|unverified NAME'") }
      guard let id = PeerID(hex: String(fields[0])) else { throw .malformed(path, line: number, "'\(fields[0])' is not a peer id") }
      let keyHex = String(fields[1])
      guard let keyBytes = [UInt8](hex: keyHex), let key = IdentityPublicKey(bytes: keyBytes) else {
        throw .malformed(path, line: number, "the key is not 64 hex digits")
      }
      guard key.owns(id) else { throw .malformed(path, line: number, "the key does not own the id \(id.hex): the line was edited or damaged") }
      guard let firstSeen = UInt64(fields[2]) else { throw .malformed(path, line: number, "'\(fields[2])' is not a time") }
      let verified: Bool
      switch fields[3] {
      case "verified": verified = true
      case "unverified": verified = false
      default: throw .malformed(path, line: number, "'\(fields[3])' is neither 'verified' nor 'unverified'")
      }
      let name: DisplayName
      do {
        name = try DisplayName(String(fields[4]))
      } catch {
        throw .malformed(path, line: number, "the name is invalid: \(error)")
      }
      guard seen.insert(id).inserted else { throw .malformed(path, line: number, "peer \(id.hex) is listed twice") }
      peers.append(KnownPeer(id: id, publicKey: keyHex.lowercased(), name: name, firstSeen: firstSeen, isVerified: verified))
    }
    guard sawVersion || peers.isEmpty else { throw .notAKnownPeersFile(path, line: 1) }
    return peers
  }
}

/// Why the known-peers file cannot be used.
public enum KnownPeersError: Error, Hashable, Sendable, CustomStringConvertible {
  case notAKnownPeersFile(String, line: Int)
  case malformed(String, line: Int, String)
  case unusable(String, String)

  public var description: String {
    switch self {
    case .notAKnownPeersFile(let path, let line):
      return
        "\(path) is not a known-peers file (line \(line) should be '\(KnownPeersFile.versionLine)'): restore it from a backup, or delete it (every peer then counts as new and unverified)"
    case .malformed(let path, let line, let reason):
      return
        "line \(line) of \(path) is damaged: \(reason); fix or delete that line (deleting it forgets that peer, and whether you verified it)"
    case .unusable(let path, let reason):
      return "cannot use \(path): \(reason)"
    }
  }
}

extension Array where Element == UInt8 {
  /// Bytes from hex digits (any case), or `nil`.
  init?(hex: String) {
    let digits = Array(hex.utf8)
    guard digits.count % 2 == 0 else { return nil }
    var bytes: [UInt8] = []
    bytes.reserveCapacity(digits.count / 2)
    func value(_ digit: UInt8) -> UInt8? {
      switch digit {
      case 0x30...0x39: digit - 0x30
      case 0x61...0x66: digit - 0x61 + 10
      case 0x41...0x46: digit - 0x41 + 10
      default: nil
      }
    }
    var index = 0
    while index < digits.count {
      guard let high = value(digits[index]), let low = value(digits[index + 1]) else { return nil }
      bytes.append(high << 4 | low)
      index += 2
    }
    self = bytes
  }
}
