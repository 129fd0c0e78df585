import CSodium

extension Envelope {
  /// The nonce of one wrap: `BLAKE2b-192("nearby-v2-wrap-nonce" || ephemeral || recipientX25519)`.
  static func wrapNonce(ephemeral: [UInt8], recipient: [UInt8]) -> [UInt8] {
    Blake2b.hash([SecureProtocol.Label.wrapNonce, ephemeral, recipient], outputCount: Int(crypto_box_NONCEBYTES))
  }

  /// `crypto_box_easy(K, nonce, recipientX25519, ephemeralSecret)`: 16-byte tag, then the
  /// 32 encrypted key bytes.
  static func wrap(_ contentKey: SecretBytes, to recipient: [UInt8], from ephemeral: EphemeralKeyPair) -> [UInt8] {
    let nonce = wrapNonce(ephemeral: ephemeral.publicKey, recipient: recipient)
    var wrapped = [UInt8](repeating: 0, count: wrapCount)
    let status = crypto_box_easy(&wrapped, contentKey.pointer, UInt64(contentKey.count), nonce, recipient, ephemeral.secretKey.pointer)
    precondition(status == 0, "crypto_box_easy failed for a checked recipient key")
    return wrapped
  }

  /// Opens our wrap with our X25519 secret (`crypto_box_open_easy`).
  static func unwrap(_ wrapped: [UInt8], ephemeral: [UInt8], recipient: IdentityKeyPair) -> SecretBytes? {
    guard let ownX25519 = recipient.publicKey.x25519PublicKey() else { return nil }
    let nonce = wrapNonce(ephemeral: ephemeral, recipient: ownX25519)
    let secret = recipient.x25519SecretKey()
    var ok = false
    let key = SecretBytes(count: AEAD.keyCount) { output in
      ok =
        crypto_box_open_easy(
          output.baseAddress!.assumingMemoryBound(to: UInt8.self), wrapped, UInt64(wrapped.count), nonce, ephemeral, secret.pointer) == 0
    }
    return ok ? key : nil
  }
}
