/// The handshake's hash chain and key derivations (PROTOCOL.md section 3.5, "Transcript
/// and keys"). `H` is unkeyed BLAKE2b-256; `MAC(k, x)` is BLAKE2b-256 keyed with `k`.
enum HandshakeKeySchedule {
  typealias Label = SecureProtocol.Label

  /// `h0 = H("nearby-v2-handshake")`.
  static let initialTranscript = Blake2b.hash([Label.handshake])

  /// The next transcript hash: `H(h || bytes)`.
  static func mix(_ transcript: [UInt8], _ bytes: [UInt8]) -> [UInt8] {
    Blake2b.hash([transcript, bytes])
  }

  /// Message 1's commitment to the initiator's ephemeral public key:
  /// `H("nearby-v2-commit" || e_I)`.
  static func commitment(to ephemeral: [UInt8]) -> [UInt8] {
    Blake2b.hash([Label.commitment, ephemeral])
  }

  /// `ck = MAC(dh, "nearby-v2-chain" || hc)`: everything after the reveal is keyed by it.
  static func chainKey(sharedSecret: SecretBytes, codeTranscript: [UInt8]) -> SecretBytes {
    Blake2b.deriveKey([Label.chain, codeTranscript], key: sharedSecret)
  }

  /// The keys of the two encrypted identity blocks (messages 3 and 4).
  static func identityKeys(chainKey: SecretBytes) -> (initiator: SecretBytes, responder: SecretBytes) {
    (Blake2b.deriveKey([Label.initiatorIdentityKey], key: chainKey), Blake2b.deriveKey([Label.responderIdentityKey], key: chainKey))
  }

  /// The record keys of the two directions, bound to the whole transcript `h4`.
  static func transportKeys(chainKey: SecretBytes, transcript: [UInt8]) -> (initiatorToResponder: SecretBytes, responderToInitiator: SecretBytes) {
    (
      Blake2b.deriveKey([Label.initiatorToResponder, transcript], key: chainKey),
      Blake2b.deriveKey([Label.responderToInitiator, transcript], key: chainKey)
    )
  }

  /// What a side signs: its role's label, the transcript hash so far, its identity block.
  static func signedMessage(label: [UInt8], transcript: [UInt8], identity: [UInt8]) -> [UInt8] {
    label + transcript + identity
  }

  /// The 12-byte all-zero nonce: each identity key seals exactly one message.
  static let zeroNonce = [UInt8](repeating: 0, count: AEAD.nonceCount)
}

/// The six-digit code two people compare to rule out a man in the middle.
///
/// It is `u64be(H("nearby-v2-code" || hc)[0..<8]) mod 1 000 000`, where `hc` is the
/// transcript up to the initiator's reveal of its ephemeral key: both ephemeral keys and
/// everything before them, and nothing either side chooses after seeing the other's key.
package struct VerificationCode: Hashable, Sendable, CustomStringConvertible {
  /// 0 ... 999 999.
  package let value: UInt32

  init(codeTranscript: [UInt8]) {
    let digest = Blake2b.hash([SecureProtocol.Label.code, codeTranscript])
    value = UInt32(digest.bigEndian(at: 0, as: UInt64.self) % 1_000_000)
  }

  /// Six digits, zero-padded: `"042917"`.
  package var digits: String {
    let text = String(value)
    return String(repeating: "0", count: 6 - text.count) + text
  }

  /// Six digits in two groups for people to read aloud: `"042 917"`.
  package var grouped: String {
    let text = digits
    return text.prefix(3) + " " + text.suffix(3)
  }

  package var description: String { digits }
}
