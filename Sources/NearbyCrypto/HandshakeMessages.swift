/// The layouts of the four handshake messages (the payloads of HANDSHAKE frames), and of
/// the identity block that messages 3 and 4 carry encrypted. Parsing checks every length.
enum HandshakeMessages {
  /// `"NRBY"`, as in the v1 HELLO.
  static let magic: [UInt8] = [0x4E, 0x52, 0x42, 0x59]
  static let keyCount = 32
  static let signatureCount = 64

  /// Message 1, initiator to responder: `01 | "NRBY" | minVersion | maxVersion | ciphers | commitment(32)`.
  struct Commit: Equatable {
    static let count = 1 + 4 + 1 + 1 + 1 + 32
    var minimumVersion: UInt8
    var maximumVersion: UInt8
    var ciphers: CipherSet
    var commitment: [UInt8]

    func encoded() -> [UInt8] {
      [1] + magic + [minimumVersion, maximumVersion, ciphers.rawValue] + commitment
    }

    init(minimumVersion: UInt8, maximumVersion: UInt8, ciphers: CipherSet, commitment: [UInt8]) {
      self.minimumVersion = minimumVersion
      self.maximumVersion = maximumVersion
      self.ciphers = ciphers
      self.commitment = commitment
    }

    init(decoding bytes: [UInt8]) throws(HandshakeError) {
      guard bytes.count == Self.count else { throw .malformedMessage(step: 1, reason: "it has \(bytes.count) bytes instead of \(Self.count)") }
      guard Array(bytes[1..<5]) == magic else { throw .malformedMessage(step: 1, reason: "the magic is not NRBY") }
      minimumVersion = bytes[5]
      maximumVersion = bytes[6]
      guard minimumVersion >= 1, minimumVersion <= maximumVersion else {
        throw .malformedMessage(step: 1, reason: "the version range \(minimumVersion)...\(maximumVersion) is invalid")
      }
      ciphers = CipherSet(rawValue: bytes[7])
      commitment = Array(bytes[8..<40])
    }
  }

  /// Message 2, responder to initiator: `02 | version | ciphers | ephemeral(32)`.
  struct Reply: Equatable {
    static let count = 1 + 1 + 1 + 32
    var version: UInt8
    var ciphers: CipherSet
    var ephemeral: [UInt8]

    func encoded() -> [UInt8] { [2, version, ciphers.rawValue] + ephemeral }

    init(version: UInt8, ciphers: CipherSet, ephemeral: [UInt8]) {
      self.version = version
      self.ciphers = ciphers
      self.ephemeral = ephemeral
    }

    init(decoding bytes: [UInt8]) throws(HandshakeError) {
      guard bytes.count == Self.count else { throw .malformedMessage(step: 2, reason: "it has \(bytes.count) bytes instead of \(Self.count)") }
      version = bytes[1]
      ciphers = CipherSet(rawValue: bytes[2])
      ephemeral = Array(bytes[3..<35])
    }
  }

  /// The smallest sealed identity block: key, length, no payload, signature, tag.
  static let minimumSealedIdentityCount = keyCount + 2 + signatureCount + AEAD.tagCount
  /// The largest sealed identity block.
  static let maximumSealedIdentityCount = minimumSealedIdentityCount + SecureProtocol.maximumPayloadLength

  /// Message 3, initiator to responder: `03 | ephemeral(32) | sealed identity`. The first 33
  /// bytes are the "reveal" the verification code is computed from.
  struct Reveal: Equatable {
    var ephemeral: [UInt8]
    var sealedIdentity: [UInt8]

    var prefix: [UInt8] { [3] + ephemeral }
    func encoded() -> [UInt8] { prefix + sealedIdentity }

    init(ephemeral: [UInt8], sealedIdentity: [UInt8]) {
      self.ephemeral = ephemeral
      self.sealedIdentity = sealedIdentity
    }

    init(decoding bytes: [UInt8]) throws(HandshakeError) {
      let sealed = bytes.count - 33
      guard (minimumSealedIdentityCount...maximumSealedIdentityCount).contains(sealed) else {
        throw .malformedMessage(
          step: 3, reason: "it has \(bytes.count) bytes; a valid one has 33 plus \(minimumSealedIdentityCount)...\(maximumSealedIdentityCount)")
      }
      ephemeral = Array(bytes[1..<33])
      sealedIdentity = Array(bytes[33...])
    }
  }

  /// Message 4, responder to initiator: `04 | sealed identity`.
  static func decodeConfirm(_ bytes: [UInt8]) throws(HandshakeError) -> [UInt8] {
    let sealed = bytes.count - 1
    guard (minimumSealedIdentityCount...maximumSealedIdentityCount).contains(sealed) else {
      throw .malformedMessage(
        step: 4, reason: "it has \(bytes.count) bytes; a valid one has 1 plus \(minimumSealedIdentityCount)...\(maximumSealedIdentityCount)")
    }
    return Array(bytes[1...])
  }

  /// The plaintext of a sealed identity: `publicKey(32) | u16 payloadLength | payload | signature(64)`.
  struct Identity: Equatable {
    var publicKey: IdentityPublicKey
    var payload: [UInt8]
    var signature: [UInt8]

    /// The part the signature covers (everything but the signature).
    static func signedPart(publicKey: IdentityPublicKey, payload: [UInt8]) -> [UInt8] {
      var bytes = publicKey.bytes
      bytes.append(bigEndian: UInt16(payload.count))
      bytes += payload
      return bytes
    }

    var signedPart: [UInt8] { Self.signedPart(publicKey: publicKey, payload: payload) }
    func encoded() -> [UInt8] { signedPart + signature }

    init(publicKey: IdentityPublicKey, payload: [UInt8], signature: [UInt8]) {
      self.publicKey = publicKey
      self.payload = payload
      self.signature = signature
    }

    init(decoding bytes: [UInt8], step: UInt8) throws(HandshakeError) {
      guard bytes.count >= keyCount + 2 + signatureCount else {
        throw .malformedMessage(step: step, reason: "the identity block has \(bytes.count) bytes, fewer than \(keyCount + 2 + signatureCount)")
      }
      let length = Int(bytes.bigEndian(at: keyCount, as: UInt16.self))
      guard length <= SecureProtocol.maximumPayloadLength, bytes.count == keyCount + 2 + length + signatureCount else {
        throw .malformedMessage(step: step, reason: "the identity block announces a payload of \(length) bytes but has \(bytes.count) bytes in all")
      }
      publicKey = IdentityPublicKey(bytes: bytes[0..<keyCount])!
      payload = Array(bytes[(keyCount + 2)..<(keyCount + 2 + length)])
      signature = Array(bytes[(keyCount + 2 + length)...])
    }
  }
}
