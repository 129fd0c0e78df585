import CSodium

/// A one-use X25519 key pair for the handshake's Diffie-Hellman exchange (and for an
/// envelope's content-key wraps). The secret is wiped when the pair is released, which the
/// handshake does as soon as it has computed the shared secret: that is forward secrecy.
package final class EphemeralKeyPair: Sendable {
  /// The 32-byte public key that goes on the wire.
  package let publicKey: [UInt8]
  /// The 32-byte secret scalar.
  let secretKey: SecretBytes

  /// The pair of a given secret (test vectors; real ones come from ``generate(using:)``).
  /// `crypto_scalarmult_base` clamps the scalar, so any 32 bytes are a valid secret.
  package init(secretKey: SecretBytes) {
    precondition(secretKey.count == Int(crypto_scalarmult_SCALARBYTES), "an X25519 secret has 32 bytes")
    Sodium.ensureInitialized()
    var publicBytes = [UInt8](repeating: 0, count: Int(crypto_scalarmult_BYTES))
    _ = crypto_scalarmult_base(&publicBytes, secretKey.pointer)
    self.secretKey = secretKey
    publicKey = publicBytes
  }

  /// A fresh pair from 32 random bytes.
  package static func generate(using random: inout some CryptoRandom) -> EphemeralKeyPair {
    EphemeralKeyPair(secretKey: random.secret(Int(crypto_scalarmult_SCALARBYTES)))
  }

  /// X25519 with the peer's public key (`crypto_scalarmult`).
  /// - Returns: `nil` when the result is all zeros (the peer sent a low-order point).
  package func sharedSecret(with peerPublicKey: [UInt8]) -> SecretBytes? {
    Self.sharedSecret(secretKey: secretKey, peerPublicKey: peerPublicKey)
  }

  /// X25519 of any secret scalar with a peer's public key; `nil` for an all-zero result.
  static func sharedSecret(secretKey: SecretBytes, peerPublicKey: [UInt8]) -> SecretBytes? {
    guard peerPublicKey.count == Int(crypto_scalarmult_BYTES) else { return nil }
    var ok = false
    let secret = SecretBytes(count: Int(crypto_scalarmult_BYTES)) { output in
      ok = crypto_scalarmult(output.baseAddress!.assumingMemoryBound(to: UInt8.self), secretKey.pointer, peerPublicKey) == 0
    }
    return ok ? secret : nil
  }
}
