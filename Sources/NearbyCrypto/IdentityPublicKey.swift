import CSodium
import NearbyCore

/// A peer's long-term public key: 32 bytes of Ed25519. The peer id is derived from it
/// (``PeerID/derived(from:)``), so a peer id names exactly one key and a peer proves it owns
/// its id by signing with the key.
package struct IdentityPublicKey: Hashable, Sendable, CustomStringConvertible {
  /// The 32 bytes of the Ed25519 public key.
  package let bytes: [UInt8]

  /// The length of an Ed25519 public key.
  package static let byteCount = 32

  /// - Returns: `nil` unless `bytes` has exactly 32 elements. Whether they are a valid
  ///   curve point is found out when a signature is checked against them.
  package init?(bytes: some Collection<UInt8>) {
    guard bytes.count == Self.byteCount else { return nil }
    self.bytes = Array(bytes)
  }

  /// The peer id this key owns.
  package var peerID: PeerID { PeerID.derived(from: self) }

  /// Whether `id` is the id this key owns: the check to make before trusting a key that
  /// claims an id (from discovery, a roster or a message's origin).
  package func owns(_ id: PeerID) -> Bool { peerID == id }

  /// Checks an Ed25519 signature (`crypto_sign_verify_detached`).
  /// - Returns: `false` for a wrong signature, a signature that is not 64 bytes, or a key
  ///   that is not a valid point.
  package func isValidSignature(_ signature: [UInt8], for message: [UInt8]) -> Bool {
    Sodium.ensureInitialized()
    guard signature.count == Int(crypto_sign_BYTES) else { return false }
    return crypto_sign_verify_detached(signature, message, UInt64(message.count), bytes) == 0
  }

  /// The X25519 public key of the same key pair (`crypto_sign_ed25519_pk_to_curve25519`),
  /// used to encrypt content keys to this peer.
  /// - Returns: `nil` when the key is not a valid Ed25519 point (or has a small order).
  package func x25519PublicKey() -> [UInt8]? {
    Sodium.ensureInitialized()
    var output = [UInt8](repeating: 0, count: Int(crypto_scalarmult_BYTES))
    guard crypto_sign_ed25519_pk_to_curve25519(&output, bytes) == 0 else { return nil }
    return output
  }

  package var description: String { "ed25519:\(bytes.hexString)" }
}

extension PeerID {
  /// The label that separates peer-id hashing from every other use of BLAKE2b.
  package static let derivationLabel = Array("nearby-peer-id-v2".utf8)

  /// The id a public key owns: the first 16 bytes of nothing else than
  /// `BLAKE2b-128("nearby-peer-id-v2" || publicKey)` (BLAKE2b with a 16-byte output,
  /// unkeyed), read most significant byte first.
  ///
  /// Finding another key with the same id is a second preimage of a 128-bit hash. The
  /// all-zero id, which the protocol forbids, has probability 2⁻¹²⁸.
  package static func derived(from key: IdentityPublicKey) -> PeerID {
    PeerID(bytes: Blake2b.hash([derivationLabel, key.bytes], outputCount: 16))!
  }
}
