/// The AEAD that protects records after the handshake. ChaCha20-Poly1305 (IETF, 96-bit
/// nonce) is mandatory; AES-256-GCM is used when both peers announce it.
package enum RecordCipher: UInt8, Hashable, Sendable, CaseIterable, CustomStringConvertible {
  /// `crypto_aead_chacha20poly1305_ietf_*`: every peer has it.
  case chacha20Poly1305 = 0x01
  /// `crypto_aead_aes256gcm_*`: only where the CPU has AES-NI and PCLMULQDQ
  /// (`crypto_aead_aes256gcm_is_available`), about 1.8 times faster there.
  case aes256GCM = 0x02

  /// The name used in the specification and the vectors.
  package var description: String {
    switch self {
    case .chacha20Poly1305: "ChaCha20-Poly1305"
    case .aes256GCM: "AES-256-GCM"
    }
  }

  /// Looks a cipher up by its specification name.
  package init?(name: String) {
    guard let match = Self.allCases.first(where: { $0.description == name }) else { return nil }
    self = match
  }

  /// Whether this machine can use the cipher.
  package var isAvailable: Bool {
    switch self {
    case .chacha20Poly1305: true
    case .aes256GCM: Sodium.aes256GCMAvailable
    }
  }
}

/// The ciphers a peer announces in the handshake (one byte, a bit per ``RecordCipher``), and
/// whether it reads PADDED records. Unknown bits are ignored, never rejected.
package struct CipherSet: OptionSet, Hashable, Sendable {
  /// The byte as it is on the wire.
  package let rawValue: UInt8
  /// Any byte: unknown bits are kept and ignored.
  package init(rawValue: UInt8) { self.rawValue = rawValue }

  /// Bit 0: ChaCha20-Poly1305, which every peer MUST announce.
  package static let chacha20Poly1305 = CipherSet(rawValue: RecordCipher.chacha20Poly1305.rawValue)
  /// Bit 1: AES-256-GCM.
  package static let aes256GCM = CipherSet(rawValue: RecordCipher.aes256GCM.rawValue)
  /// Bit 2, not a cipher: the sender reads PADDED records (PROTOCOL.md 3.10), so the other
  /// side may send them.
  package static let paddedRecords = CipherSet(rawValue: 0x04)

  /// What this machine announces: ChaCha20-Poly1305, plus AES-256-GCM when the CPU runs it,
  /// and that it reads PADDED records.
  package static var locallySupported: CipherSet {
    Sodium.aes256GCMAvailable ? [.chacha20Poly1305, .aes256GCM, .paddedRecords] : [.chacha20Poly1305, .paddedRecords]
  }

  /// The cipher two announcements agree on: AES-256-GCM when both have it, else
  /// ChaCha20-Poly1305.
  /// - Returns: `nil` when either side lacks ChaCha20-Poly1305 (a protocol violation).
  package func negotiated(with other: CipherSet) -> RecordCipher? {
    guard contains(.chacha20Poly1305), other.contains(.chacha20Poly1305) else { return nil }
    return contains(.aes256GCM) && other.contains(.aes256GCM) ? .aes256GCM : .chacha20Poly1305
  }
}
