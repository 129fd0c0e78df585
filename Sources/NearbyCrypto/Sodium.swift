import CSodium

/// libsodium's one-time initialisation, done before the first call that needs it.
///
/// `sodium_init` picks the fastest implementations for this CPU (and finds out whether
/// AES-256-GCM is available) and is safe to call from any thread; a global `let` runs it
/// exactly once.
enum Sodium {
  private static let initialized: Bool = sodium_init() >= 0

  /// Calls `sodium_init` once; traps if libsodium cannot start (it then has no usable
  /// random source, and nothing cryptographic can be done safely).
  @inline(__always)
  static func ensureInitialized() {
    precondition(initialized, "libsodium failed to initialise (sodium_init returned -1): no secure random source")
  }

  /// Whether this CPU runs AES-256-GCM in libsodium (AES-NI and PCLMULQDQ):
  /// `crypto_aead_aes256gcm_is_available`.
  static var aes256GCMAvailable: Bool {
    ensureInitialized()
    return crypto_aead_aes256gcm_is_available() == 1
  }

  /// Compares two byte strings in time that depends only on their length (`sodium_memcmp`).
  static func constantTimeEqual(_ lhs: [UInt8], _ rhs: [UInt8]) -> Bool {
    guard lhs.count == rhs.count else { return false }
    return lhs.withUnsafeBytes { left in
      rhs.withUnsafeBytes { right in sodium_memcmp(left.baseAddress, right.baseAddress, lhs.count) == 0 }
    }
  }
}
