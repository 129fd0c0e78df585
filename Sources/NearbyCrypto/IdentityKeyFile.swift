import NearbyCore

/// The text format of a peer's key file: the secret seed of its identity, with a format
/// version line first. Reading and writing the file (with mode 0600) is the caller's job.
///
/// ```
/// # Nearby identity key: the secret key of one peer. Keep it private (mode 0600).
/// nearby-identity-key 2
/// peer-id 5e6f7a8b9c0d1e2f30415263748596a7
/// seed 9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60
/// ```
///
/// Blank lines and lines starting with `#` are ignored; leading and trailing spaces (and a
/// `\r` before the newline) are too. The first other line is the version line. `seed` (64
/// hex digits) is required; `peer-id` is optional and, when present, must be the id the seed
/// derives (a check that the file was not edited or damaged).
package enum IdentityKeyFile {
  /// The format version this code writes and reads.
  package static let formatVersion = 2
  static let versionKeyword = "nearby-identity-key"

  /// The file's text for `identity`. It holds the secret seed: write it only to a file that
  /// nobody else can read.
  package static func encode(_ identity: IdentityKeyPair) -> String {
    """
    # Nearby identity key: the secret key of one peer. Keep it private (mode 0600).
    \(versionKeyword) \(formatVersion)
    peer-id \(identity.peerID.hex)
    seed \(identity.seed.copiedBytes.hexString)

    """
  }

  /// Reads a key file's text.
  /// - Throws: ``IdentityKeyFileError`` naming the line and what is wrong with it.
  package static func decode(_ text: String) throws(IdentityKeyFileError) -> IdentityKeyPair {
    var sawVersion = false
    var seed: [UInt8]?
    var claimedID: PeerID?
    var seen: Set<String> = []
    for (index, rawLine) in text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline).enumerated() {
      let lineNumber = index + 1
      let line = rawLine.trimmingSpaces
      if line.isEmpty || line.hasPrefix("#") { continue }
      let fields = line.split(separator: " ", omittingEmptySubsequences: true)
      guard sawVersion else {
        guard fields.count == 2, fields[0] == versionKeyword else {
          throw .notAKeyFile(line: lineNumber)
        }
        guard fields[1] == "\(formatVersion)" else { throw .unsupportedVersion(String(fields[1].prefix(16))) }
        sawVersion = true
        continue
      }
      guard fields.count == 2 else {
        throw .malformedLine(line: lineNumber, reason: "expected a field name and one value separated by a space")
      }
      let name = String(fields[0])
      guard ["seed", "peer-id"].contains(name) else { throw .unknownField(String(name.prefix(32)), line: lineNumber) }
      guard seen.insert(name).inserted else { throw .duplicateField(name, line: lineNumber) }
      if name == "seed" {
        guard let bytes = [UInt8](hexString: fields[1]), bytes.count == IdentityKeyPair.seedByteCount else {
          throw .malformedLine(line: lineNumber, reason: "the seed must be 64 hexadecimal digits")
        }
        seed = bytes
      } else {
        guard let id = PeerID(hex: fields[1]) else {
          throw .malformedLine(line: lineNumber, reason: "the peer id must be 32 hexadecimal digits, not all zero")
        }
        claimedID = id
      }
    }
    guard sawVersion else { throw .empty }
    guard var seedBytes = seed else { throw .missingSeed }
    let identity = IdentityKeyPair(seed: SecretBytes(seedBytes))
    for index in seedBytes.indices { seedBytes[index] = 0 }
    if let claimedID, claimedID != identity.peerID {
      throw .peerIDMismatch(file: claimedID, derived: identity.peerID)
    }
    return identity
  }
}

extension Substring {
  fileprivate var trimmingSpaces: Substring {
    let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" || $0 == "\r" }
    guard let first = firstIndex(where: { !isSpace($0) }), let last = lastIndex(where: { !isSpace($0) }) else { return "" }
    return self[first...last]
  }
}
