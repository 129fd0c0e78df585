import CSodium

/// BLAKE2b through libsodium's `crypto_generichash` (incremental API, so the parts of a
/// message are hashed without being concatenated first).
///
/// Unkeyed, it is the protocol's hash `H`; keyed with a 32-byte key it is the PRF and KDF
/// `MAC(key, ...)` (BLAKE2b's keyed mode is a PRF: libsodium 1.0.18 has no HKDF).
enum Blake2b {
  /// The hash of the concatenation of `parts`.
  /// - Parameters:
  ///   - outputCount: 16 to 64 bytes.
  ///   - key: nil, or 16 to 64 bytes.
  static func hash(_ parts: [[UInt8]], outputCount: Int = 32, key: [UInt8]? = nil) -> [UInt8] {
    if let key {
      return key.withUnsafeBytes { hash(parts, outputCount: outputCount, rawKey: $0) }
    }
    return hash(parts, outputCount: outputCount, rawKey: nil)
  }

  /// The keyed hash of the concatenation of `parts` under a secret key.
  static func hash(_ parts: [[UInt8]], outputCount: Int = 32, key: SecretBytes) -> [UInt8] {
    key.withUnsafeBytes { hash(parts, outputCount: outputCount, rawKey: $0) }
  }

  /// A keyed hash written straight into secret memory: a derived key.
  static func deriveKey(_ parts: [[UInt8]], key: SecretBytes) -> SecretBytes {
    key.withUnsafeBytes { rawKey in
      SecretBytes(count: 32) { output in hash(parts, rawKey: rawKey, into: output) }
    }
  }

  /// A keyed hash under a secret given as raw bytes, written into secret memory.
  static func deriveKey(_ parts: [[UInt8]], rawKey: UnsafeRawBufferPointer) -> SecretBytes {
    SecretBytes(count: 32) { output in hash(parts, rawKey: rawKey, into: output) }
  }

  private static func hash(_ parts: [[UInt8]], outputCount: Int, rawKey: UnsafeRawBufferPointer?) -> [UInt8] {
    var output = [UInt8](repeating: 0, count: outputCount)
    output.withUnsafeMutableBytes { hash(parts, rawKey: rawKey, into: $0) }
    return output
  }

  private static func hash(_ parts: [[UInt8]], rawKey: UnsafeRawBufferPointer?, into output: UnsafeMutableRawBufferPointer) {
    Sodium.ensureInitialized()
    precondition((16...64).contains(output.count), "BLAKE2b output of \(output.count) bytes")
    // The state is 384 opaque bytes that libsodium wants 64-byte aligned.
    let state = UnsafeMutableRawPointer.allocate(byteCount: crypto_generichash_statebytes(), alignment: 64)
    defer {
      sodium_memzero(state, crypto_generichash_statebytes())
      state.deallocate()
    }
    // The state type is over-aligned in C, so Swift imports it as an opaque pointer.
    let typed = OpaquePointer(state)
    let key = rawKey?.baseAddress?.assumingMemoryBound(to: UInt8.self)
    let status = crypto_generichash_init(typed, key, rawKey?.count ?? 0, output.count)
    precondition(status == 0, "crypto_generichash_init failed: key of \(rawKey?.count ?? 0) bytes")
    for part in parts {
      part.withUnsafeBufferPointer { _ = crypto_generichash_update(typed, $0.baseAddress, UInt64($0.count)) }
    }
    _ = crypto_generichash_final(typed, output.baseAddress!.assumingMemoryBound(to: UInt8.self), output.count)
  }
}
