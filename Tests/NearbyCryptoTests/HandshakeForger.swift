import NearbyCore

@testable import NearbyCrypto

/// Builds handshake messages the way a malicious or broken peer would: it recomputes the
/// key schedule from the specification with knobs for what to get wrong, so the tests can
/// reach checks (signatures, key ownership, identity layout) that tampering with bytes
/// cannot reach past the AEAD.
struct HandshakeForger {
  /// What goes into an identity block.
  struct IdentityKnobs {
    var claimedKey: IdentityPublicKey
    var signer: IdentityKeyPair
    var payload: [UInt8] = []
    var label: [UInt8]
    var flipSignatureBit = false
    /// Replaces the encoded block (after signing) when set.
    var rawBlock: [UInt8]?
  }

  let ephemeral: EphemeralKeyPair
  private(set) var transcript = HandshakeKeySchedule.initialTranscript
  private(set) var chainKey: SecretBytes?

  init(ephemeralSeed: UInt8) {
    ephemeral = EphemeralKeyPair(secretKey: SecretBytes([UInt8](repeating: ephemeralSeed, count: 32)))
  }

  /// Message 1 from a forged initiator, committing to `ephemeralPublic` (normally ours).
  mutating func message1(committingTo ephemeralPublic: [UInt8]? = nil, ciphers: CipherSet = .chacha20Poly1305) -> [UInt8] {
    let message = HandshakeMessages.Commit(
      minimumVersion: 2, maximumVersion: 2, ciphers: ciphers,
      commitment: HandshakeKeySchedule.commitment(to: ephemeralPublic ?? ephemeral.publicKey)
    ).encoded()
    transcript = HandshakeKeySchedule.mix(transcript, message)
    return Self.frame(message)
  }

  /// Message 3 answering the real responder's message 2 (a whole frame).
  mutating func message3(answering frame2: [UInt8], revealing revealed: [UInt8]? = nil, identity: IdentityKnobs) -> [UInt8] {
    let message2 = Array(frame2.dropFirst(5))
    transcript = HandshakeKeySchedule.mix(transcript, message2)
    let responderEphemeral = Array(message2[3..<35])
    let reveal = [3] + (revealed ?? ephemeral.publicKey)
    let codeTranscript = HandshakeKeySchedule.mix(transcript, reveal)
    let shared = ephemeral.sharedSecret(with: responderEphemeral) ?? SecretBytes([UInt8](repeating: 0, count: 32))
    let chainKey = HandshakeKeySchedule.chainKey(sharedSecret: shared, codeTranscript: codeTranscript)
    self.chainKey = chainKey
    let sealed = sealIdentity(identity, transcript: codeTranscript, key: HandshakeKeySchedule.identityKeys(chainKey: chainKey).initiator)
    transcript = HandshakeKeySchedule.mix(codeTranscript, sealed)
    return Self.frame(reveal + sealed)
  }

  /// Message 2 from a forged responder answering the real initiator's message 1.
  mutating func message2(answering frame1: [UInt8]) -> [UInt8] {
    transcript = HandshakeKeySchedule.mix(transcript, Array(frame1.dropFirst(5)))
    let message = HandshakeMessages.Reply(version: 2, ciphers: .chacha20Poly1305, ephemeral: ephemeral.publicKey).encoded()
    transcript = HandshakeKeySchedule.mix(transcript, message)
    return Self.frame(message)
  }

  /// Message 4 from a forged responder answering the real initiator's message 3.
  mutating func message4(answering frame3: [UInt8], identity: IdentityKnobs) -> [UInt8] {
    let message3 = Array(frame3.dropFirst(5))
    let codeTranscript = HandshakeKeySchedule.mix(transcript, Array(message3[0..<33]))
    let shared = ephemeral.sharedSecret(with: Array(message3[1..<33]))!
    let chainKey = HandshakeKeySchedule.chainKey(sharedSecret: shared, codeTranscript: codeTranscript)
    transcript = HandshakeKeySchedule.mix(codeTranscript, Array(message3[33...]))
    let sealed = sealIdentity(identity, transcript: transcript, key: HandshakeKeySchedule.identityKeys(chainKey: chainKey).responder)
    return Self.frame([4] + sealed)
  }

  private func sealIdentity(_ knobs: IdentityKnobs, transcript: [UInt8], key: SecretBytes) -> [UInt8] {
    let signedPart = HandshakeMessages.Identity.signedPart(publicKey: knobs.claimedKey, payload: knobs.payload)
    var signature = knobs.signer.sign(HandshakeKeySchedule.signedMessage(label: knobs.label, transcript: transcript, identity: signedPart))
    if knobs.flipSignatureBit { signature[17] ^= 0x20 }
    let block = knobs.rawBlock ?? signedPart + signature
    return AEAD.seal(.chacha20Poly1305, key: key, nonce: HandshakeKeySchedule.zeroNonce, additionalData: transcript, plaintext: block)
  }

  static func frame(_ message: [UInt8]) -> [UInt8] { HandshakeFrameReader.frame(type: SecureFrameType.handshake.rawValue, payload: message) }
}

extension HandshakeForger.IdentityKnobs {
  static func initiator(_ identity: IdentityKeyPair) -> Self {
    Self(claimedKey: identity.publicKey, signer: identity, label: SecureProtocol.Label.initiatorSignature)
  }

  static func responder(_ identity: IdentityKeyPair) -> Self {
    Self(claimedKey: identity.publicKey, signer: identity, label: SecureProtocol.Label.responderSignature)
  }
}
