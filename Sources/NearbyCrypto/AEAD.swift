import CSodium

/// The two record AEADs over raw memory, in libsodium's combined layout (ciphertext, then
/// the 16-byte tag). Both take a 32-byte key and a 12-byte nonce, and both may work in place.
enum AEAD {
  static let keyCount = 32
  static let nonceCount = 12
  static let tagCount = 16

  /// AES-256-GCM's key schedule for `key`, in memory that is wiped when released: passed as
  /// `expandedKey`, it saves expanding the key again for every record.
  static func expandAES256GCMKey(_ key: SecretBytes) -> SecretBytes {
    precondition(key.count == keyCount && Sodium.aes256GCMAvailable)
    return SecretBytes(count: MemoryLayout<crypto_aead_aes256gcm_state>.size) { state in
      let status = crypto_aead_aes256gcm_beforenm(state.baseAddress!.bindMemory(to: crypto_aead_aes256gcm_state.self, capacity: 1), key.pointer)
      precondition(status == 0, "AES-256-GCM key expansion failed")
    }
  }

  private static func state(_ expanded: SecretBytes) -> UnsafePointer<crypto_aead_aes256gcm_state> {
    UnsafeRawPointer(expanded.pointer).assumingMemoryBound(to: crypto_aead_aes256gcm_state.self)
  }

  /// Encrypts `plaintext` into `output` (`plaintext.count + 16` bytes; may be the same
  /// memory as `plaintext`). `expandedKey`: `key`'s ``expandAES256GCMKey(_:)`` (AES-256-GCM only).
  static func seal(
    _ cipher: RecordCipher, key: SecretBytes, expandedKey: SecretBytes? = nil, nonce: UnsafeRawBufferPointer,
    additionalData: UnsafeRawBufferPointer, plaintext: UnsafeRawBufferPointer, into output: UnsafeMutableRawPointer
  ) {
    precondition(nonce.count == nonceCount && key.count == keyCount)
    let out = output.assumingMemoryBound(to: UInt8.self)
    let message = plaintext.baseAddress?.assumingMemoryBound(to: UInt8.self)
    let ad = additionalData.baseAddress?.assumingMemoryBound(to: UInt8.self)
    let npub = nonce.baseAddress!.assumingMemoryBound(to: UInt8.self)
    let status: Int32
    switch cipher {
    case .chacha20Poly1305:
      status = crypto_aead_chacha20poly1305_ietf_encrypt(
        out, nil, message, UInt64(plaintext.count), ad, UInt64(additionalData.count), nil, npub, key.pointer)
    case .aes256GCM:
      precondition(Sodium.aes256GCMAvailable, "AES-256-GCM was negotiated on a CPU without AES-NI")
      if let expandedKey {
        status = crypto_aead_aes256gcm_encrypt_afternm(
          out, nil, message, UInt64(plaintext.count), ad, UInt64(additionalData.count), nil, npub, state(expandedKey))
      } else {
        status = crypto_aead_aes256gcm_encrypt(
          out, nil, message, UInt64(plaintext.count), ad, UInt64(additionalData.count), nil, npub, key.pointer)
      }
    }
    precondition(status == 0, "\(cipher) encryption failed")
  }

  /// Decrypts and authenticates `sealed` (ciphertext then tag) into `output`
  /// (`sealed.count - 16` bytes; may be the same memory as `sealed`). `expandedKey` as for
  /// ``seal(_:key:expandedKey:nonce:additionalData:plaintext:into:)``.
  /// - Returns: `false` when the tag does not match (the output is then meaningless).
  static func open(
    _ cipher: RecordCipher, key: SecretBytes, expandedKey: SecretBytes? = nil, nonce: UnsafeRawBufferPointer,
    additionalData: UnsafeRawBufferPointer, sealed: UnsafeRawBufferPointer, into output: UnsafeMutableRawPointer
  ) -> Bool {
    precondition(nonce.count == nonceCount && key.count == keyCount)
    guard sealed.count >= tagCount else { return false }
    let out = output.assumingMemoryBound(to: UInt8.self)
    let input = sealed.baseAddress!.assumingMemoryBound(to: UInt8.self)
    let ad = additionalData.baseAddress?.assumingMemoryBound(to: UInt8.self)
    let npub = nonce.baseAddress!.assumingMemoryBound(to: UInt8.self)
    switch cipher {
    case .chacha20Poly1305:
      return crypto_aead_chacha20poly1305_ietf_decrypt(
        out, nil, nil, input, UInt64(sealed.count), ad, UInt64(additionalData.count), npub, key.pointer) == 0
    case .aes256GCM:
      guard Sodium.aes256GCMAvailable else { return false }
      if let expandedKey {
        return crypto_aead_aes256gcm_decrypt_afternm(
          out, nil, nil, input, UInt64(sealed.count), ad, UInt64(additionalData.count), npub, state(expandedKey)) == 0
      }
      return crypto_aead_aes256gcm_decrypt(
        out, nil, nil, input, UInt64(sealed.count), ad, UInt64(additionalData.count), npub, key.pointer) == 0
    }
  }

  /// Seals a byte array (handshake identity blocks, envelope bodies).
  static func seal(_ cipher: RecordCipher, key: SecretBytes, nonce: [UInt8], additionalData: [UInt8], plaintext: [UInt8]) -> [UInt8] {
    var output = [UInt8](repeating: 0, count: plaintext.count + tagCount)
    nonce.withUnsafeBytes { nonce in
      additionalData.withUnsafeBytes { ad in
        plaintext.withUnsafeBytes { message in
          output.withUnsafeMutableBytes { seal(cipher, key: key, nonce: nonce, additionalData: ad, plaintext: message, into: $0.baseAddress!) }
        }
      }
    }
    return output
  }

  /// Opens a byte array sealed by ``seal(_:key:nonce:additionalData:plaintext:)``.
  /// - Returns: the plaintext, or `nil` when it was not sealed with this key, nonce and data.
  static func open(_ cipher: RecordCipher, key: SecretBytes, nonce: [UInt8], additionalData: [UInt8], sealed: [UInt8]) -> [UInt8]? {
    guard sealed.count >= tagCount else { return nil }
    var output = [UInt8](repeating: 0, count: max(sealed.count - tagCount, 1))
    let ok = nonce.withUnsafeBytes { nonce in
      additionalData.withUnsafeBytes { ad in
        sealed.withUnsafeBytes { input in
          output.withUnsafeMutableBytes { open(cipher, key: key, nonce: nonce, additionalData: ad, sealed: input, into: $0.baseAddress!) }
        }
      }
    }
    guard ok else { return nil }
    output.removeLast(output.count - (sealed.count - tagCount))
    return output
  }
}
