import CSodium
import NearbyCore

/// A peer's long-term Ed25519 key pair: it signs handshakes, messages and receipts, and its
/// public key derives the peer id.
///
/// The secret key lives in memory of its own that is wiped (`sodium_memzero`) when the key
/// pair is released. It is immutable, so one instance may be shared by every session.
package final class IdentityKeyPair: Sendable {
  /// The public half.
  package let publicKey: IdentityPublicKey
  /// The 32-byte seed the key pair was derived from (the secret to keep in the key file).
  package let seed: SecretBytes
  /// libsodium's 64-byte secret key (seed followed by the public key).
  private let secretKey: SecretBytes

  /// The length of a seed.
  package static let seedByteCount = 32

  /// Derives the key pair from a 32-byte seed (`crypto_sign_seed_keypair`).
  package init(seed: SecretBytes) {
    precondition(seed.count == Self.seedByteCount, "an Ed25519 seed has 32 bytes, not \(seed.count)")
    Sodium.ensureInitialized()
    var publicBytes = [UInt8](repeating: 0, count: Int(crypto_sign_PUBLICKEYBYTES))
    secretKey = SecretBytes(count: Int(crypto_sign_SECRETKEYBYTES)) { secret in
      _ = crypto_sign_seed_keypair(&publicBytes, secret.baseAddress!.assumingMemoryBound(to: UInt8.self), seed.pointer)
    }
    self.seed = seed
    publicKey = IdentityPublicKey(bytes: publicBytes)!
  }

  /// Derives the key pair from seed bytes (tests and vectors; real seeds come from the key
  /// file or ``generate(using:)``).
  /// - Returns: `nil` unless `seed` has 32 bytes.
  package convenience init?(seedBytes: [UInt8]) {
    guard seedBytes.count == Self.seedByteCount else { return nil }
    self.init(seed: SecretBytes(seedBytes))
  }

  /// A new key pair from 32 random bytes.
  package static func generate(using random: inout some CryptoRandom) -> IdentityKeyPair {
    IdentityKeyPair(seed: random.secret(seedByteCount))
  }

  /// This key pair's peer id.
  package var peerID: PeerID { publicKey.peerID }

  /// An Ed25519 signature of `message` (`crypto_sign_detached`): 64 bytes, deterministic.
  package func sign(_ message: [UInt8]) -> [UInt8] {
    var signature = [UInt8](repeating: 0, count: Int(crypto_sign_BYTES))
    _ = crypto_sign_detached(&signature, nil, message, UInt64(message.count), secretKey.pointer)
    return signature
  }

  /// The X25519 secret key of the same key pair (`crypto_sign_ed25519_sk_to_curve25519`),
  /// which opens content keys sent to this peer.
  package func x25519SecretKey() -> SecretBytes {
    SecretBytes(count: Int(crypto_scalarmult_SCALARBYTES)) { output in
      _ = crypto_sign_ed25519_sk_to_curve25519(output.baseAddress!.assumingMemoryBound(to: UInt8.self), secretKey.pointer)
    }
  }
}
