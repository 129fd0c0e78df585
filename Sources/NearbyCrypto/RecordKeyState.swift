/// When a direction moves to its next key: after ``records`` records or once ``bytes``
/// plaintext bytes were sealed under the current key, whichever comes first.
package struct RekeyInterval: Hashable, Sendable {
  /// Records per key.
  package var records: UInt64
  /// Plaintext bytes per key (the record that reaches it is the last one under the key).
  package var bytes: UInt64

  /// Both limits must be positive.
  package init(records: UInt64, bytes: UInt64) {
    precondition(records > 0 && bytes > 0, "a rekey interval must be positive")
    self.records = records
    self.bytes = bytes
  }

  /// The protocol's interval: 2²⁰ records or 2³⁰ bytes. Both sides must use it.
  package static let standard = RekeyInterval(records: SecureProtocol.rekeyAfterRecords, bytes: SecureProtocol.rekeyAfterBytes)
}

/// The key, sequence number and nonce of one direction of the record stream, shared by the
/// sealer and the opener so that both step through keys identically.
///
/// The nonce of record `n` is `00 00 00 00 || u64be(n)`; `n` counts every record of the
/// direction from 0 and never restarts, also across keys. After each record the key moves on
/// when the interval is reached: `k_{e+1} = MAC(k_e, "nearby-v2-rekey")`, and `k_e` is
/// released (wiped).
struct RecordKeyState {
  let cipher: RecordCipher
  let interval: RekeyInterval
  private(set) var key: SecretBytes {
    didSet { expandedKey = Self.expand(key, for: cipher) }
  }
  /// AES-256-GCM's expanded key schedule of ``key`` (`crypto_aead_aes256gcm_beforenm`), made
  /// once per key instead of once per record; nil for ChaCha20-Poly1305, which has none.
  private(set) var expandedKey: SecretBytes?
  /// The sequence number of the next record.
  private(set) var sequence: UInt64 = 0
  /// How many times the key moved on.
  private(set) var epoch: UInt64 = 0
  private var recordsUnderKey: UInt64 = 0
  private var bytesUnderKey: UInt64 = 0
  /// The nonce of record ``sequence``, kept up to date in place (no allocation per record).
  private(set) var nonce = [UInt8](repeating: 0, count: AEAD.nonceCount)

  init(cipher: RecordCipher, key: SecretBytes, interval: RekeyInterval) {
    precondition(key.count == AEAD.keyCount, "a record key has 32 bytes")
    self.cipher = cipher
    self.key = key
    self.interval = interval
    expandedKey = Self.expand(key, for: cipher)
  }

  private static func expand(_ key: SecretBytes, for cipher: RecordCipher) -> SecretBytes? {
    guard cipher == .aes256GCM, Sodium.aes256GCMAvailable else { return nil }
    return AEAD.expandAES256GCMKey(key)
  }

  /// Seals `plaintext` under the current key and nonce into `output` (see ``AEAD``). Here,
  /// not in the sealer, and `mutating` although it changes nothing: the keys are read where
  /// they lie. Read out of a class's property, each of them (and the nonce's storage) was
  /// retained and released for every record, and a non-mutating method copied the whole
  /// state to call it.
  mutating func seal(additionalData: UnsafeRawBufferPointer, plaintext: UnsafeRawBufferPointer, into output: UnsafeMutableRawPointer) {
    nonce.withUnsafeBytes { nonce in
      AEAD.seal(cipher, key: key, expandedKey: expandedKey, nonce: nonce, additionalData: additionalData, plaintext: plaintext, into: output)
    }
  }

  /// Opens `sealed` under the current key and nonce into `output` (see ``AEAD``).
  /// - Returns: whether it was authentic.
  mutating func open(additionalData: UnsafeRawBufferPointer, sealed: UnsafeRawBufferPointer, into output: UnsafeMutableRawPointer) -> Bool {
    nonce.withUnsafeBytes { nonce in
      AEAD.open(cipher, key: key, expandedKey: expandedKey, nonce: nonce, additionalData: additionalData, sealed: sealed, into: output)
    }
  }

  /// Whether another record may be sealed or opened (the sequence number is not exhausted).
  var canAdvance: Bool { sequence < UInt64.max }

  /// Call after each record sealed or opened under the current key and nonce.
  mutating func advance(plaintextCount: Int) {
    sequence += 1
    recordsUnderKey += 1
    bytesUnderKey += UInt64(plaintextCount)
    // Bytes 4..<12, big-endian, in one store (a byte loop over `stride` was not specialized:
    // about 500 instructions per record).
    let sequence = sequence
    nonce.withUnsafeMutableBytes { $0.storeBytes(of: sequence.bigEndian, toByteOffset: 4, as: UInt64.self) }
    if recordsUnderKey >= interval.records || bytesUnderKey >= interval.bytes {
      key = Blake2b.deriveKey([SecureProtocol.Label.rekey], key: key)
      epoch += 1
      recordsUnderKey = 0
      bytesUnderKey = 0
    }
  }
}
