import NearbyCore

/// Why a key file's text is not a usable identity. The descriptions never quote the seed.
package enum IdentityKeyFileError: Error, Hashable, Sendable, CustomStringConvertible {
  /// No version line at all: the text is empty or only comments.
  case empty
  /// The first line that is not blank or a comment is not `nearby-identity-key N`.
  case notAKeyFile(line: Int)
  /// A version other than 2.
  case unsupportedVersion(String)
  /// A line that is not `name value`, or a value of the wrong shape.
  case malformedLine(line: Int, reason: String)
  /// A field this version does not define.
  case unknownField(String, line: Int)
  /// A field given twice.
  case duplicateField(String, line: Int)
  /// No `seed` line.
  case missingSeed
  /// The `peer-id` line names another id than the one the seed derives.
  case peerIDMismatch(file: PeerID, derived: PeerID)

  package var description: String {
    switch self {
    case .empty:
      "the identity key file is empty (no 'nearby-identity-key 2' line): delete it to create a new identity, or restore it from a backup"
    case .notAKeyFile(let line):
      "the identity key file does not start with 'nearby-identity-key 2' (line \(line)): it is not a Nearby key file, or it is damaged; restore it from a backup or delete it to create a new identity"
    case .unsupportedVersion(let version):
      "the identity key file has format version \(version); this Nearby reads version \(IdentityKeyFile.formatVersion): use the Nearby that wrote it, or delete it to create a new identity"
    case .malformedLine(let line, let reason):
      "line \(line) of the identity key file is malformed: \(reason); restore the file from a backup or delete it to create a new identity"
    case .unknownField(let name, let line):
      "line \(line) of the identity key file has the unknown field '\(name)' (expected 'seed' or 'peer-id'): remove that line"
    case .duplicateField(let name, let line):
      "line \(line) of the identity key file repeats the field '\(name)': keep only one"
    case .missingSeed:
      "the identity key file has no 'seed' line, so it holds no key: restore it from a backup or delete it to create a new identity"
    case .peerIDMismatch(let file, let derived):
      "the identity key file says peer id \(file.hex) but its seed belongs to \(derived.hex): the file was edited or damaged; restore it from a backup (or delete the peer-id line to keep the seed's id)"
    }
  }
}
