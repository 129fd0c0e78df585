import NearbyCore
import Testing

@testable import NearbyCrypto

@Suite("End-to-end envelopes and signed receipts")
struct EnvelopeTests {
  static let body = Array("meet at the north door".utf8)
  static let header = Envelope.Header(
    origin: Fixture.alice.peerID, messageID: 0x0102_0304_0506_0708, timestamp: 1_767_225_600_000,
    recipients: [Fixture.bob.peerID, Fixture.carol.peerID])

  static func sealed(header: Envelope.Header = header, flags: Envelope.Flags = .toEveryone) -> [UInt8] {
    var random = SeededCryptoRandom(repeating: 9)
    return try! Envelope.seal(
      body, header: header, flags: flags, recipientKeys: [Fixture.bob.publicKey, Fixture.carol.publicKey], origin: Fixture.alice, random: &random)
  }

  @Test("every listed recipient opens the same body; the size is as documented")
  func roundTrip() throws {
    let sealed = Self.sealed()
    #expect(sealed.count == Envelope.sealedCount(bodyCount: Self.body.count, recipientCount: 2))
    #expect(sealed.count == Self.body.count + 146 + 2 * 48)
    for recipient in [Fixture.bob, Fixture.carol] {
      let opened = try Envelope.open(sealed, header: Self.header, originKey: Fixture.alice.publicKey, recipient: recipient)
      #expect(opened.body == Self.body)
      #expect(opened.flags == .toEveryone)
    }
    #expect(try Envelope.verify(sealed, header: Self.header, originKey: Fixture.alice.publicKey) == .toEveryone)
    // The body is not in the clear.
    #expect(!sealed.indices.dropLast(Self.body.count).contains { Array(sealed[$0..<($0 + Self.body.count)]) == Self.body })
  }

  @Test("a relay, or anyone not listed, cannot open it")
  func notListed() {
    let sealed = Self.sealed()
    #expect(throws: EnvelopeError.notARecipient(Fixture.mallory.peerID)) {
      try Envelope.open(sealed, header: Self.header, originKey: Fixture.alice.publicKey, recipient: Fixture.mallory)
    }
    // Putting itself in the list in a recipient's place breaks the signature; adding
    // itself does not even fit the layout.
    var swapped = Self.header
    swapped.recipients[1] = Fixture.mallory.peerID
    #expect(throws: EnvelopeError.invalidSignature) {
      try Envelope.open(sealed, header: swapped, originKey: Fixture.alice.publicKey, recipient: Fixture.mallory)
    }
    var widened = Self.header
    widened.recipients.append(Fixture.mallory.peerID)
    #expect(throws: EnvelopeError.malformed("264 bytes, fewer than the 290 of an empty body to 3 recipients")) {
      try Envelope.open(sealed, header: widened, originKey: Fixture.alice.publicKey, recipient: Fixture.mallory)
    }
  }

  @Test("altering the origin, id, timestamp, recipients or any byte of the envelope is refused")
  func tampering() {
    let sealed = Self.sealed()
    var headers: [Envelope.Header] = []
    var header = Self.header
    header.messageID += 1
    headers.append(header)
    header = Self.header
    header.timestamp -= 1
    headers.append(header)
    header = Self.header
    header.recipients.reverse()
    headers.append(header)
    header = Self.header
    header.recipients.removeLast()
    headers.append(header)
    for altered in headers {
      #expect(throws: (any Error).self) { try Envelope.open(sealed, header: altered, originKey: Fixture.alice.publicKey, recipient: Fixture.bob) }
    }
    header = Self.header
    header.origin = Fixture.mallory.peerID
    #expect(throws: EnvelopeError.originKeyMismatch(origin: Fixture.mallory.peerID, keyOwner: Fixture.alice.peerID)) {
      try Envelope.open(sealed, header: header, originKey: Fixture.alice.publicKey, recipient: Fixture.bob)
    }
    #expect(throws: EnvelopeError.invalidSignature) {
      try Envelope.open(sealed, header: header, originKey: Fixture.mallory.publicKey, recipient: Fixture.bob)
    }
    for index in sealed.indices {
      var altered = sealed
      altered[index] ^= 0x04
      #expect(throws: (any Error).self, "byte \(index)") {
        try Envelope.open(altered, header: Self.header, originKey: Fixture.alice.publicKey, recipient: Fixture.bob)
      }
    }
    #expect(throws: EnvelopeError.malformed("241 bytes, fewer than the 242 of an empty body to 2 recipients")) {
      try Envelope.open(Array(sealed.prefix(241)), header: Self.header, originKey: Fixture.alice.publicKey, recipient: Fixture.bob)
    }
  }

  @Test("an origin that gives recipients different content keys is caught by the commitment")
  func equivocation() throws {
    // A malicious origin: bob's wrap holds another key than the committed one, and the
    // origin signs the result, so only the commitment can tell.
    var random = SeededCryptoRandom(repeating: 4)
    var sealed = Self.sealed()
    let ephemeralSecret = SecretBytes(random.bytes(32))
    let ephemeral = EphemeralKeyPair(secretKey: ephemeralSecret)
    let otherKey = SecretBytes(random.bytes(32))
    sealed.replaceSubrange(2..<34, with: ephemeral.publicKey)
    sealed.replaceSubrange(66..<114, with: Envelope.wrap(otherKey, to: Fixture.bob.publicKey.x25519PublicKey()!, from: ephemeral))
    sealed.removeLast(64)
    sealed += Fixture.alice.sign(Envelope.signedMessage(header: Self.header, sealedPrefix: sealed[...]))
    #expect(throws: EnvelopeError.keyCommitmentMismatch) {
      try Envelope.open(sealed, header: Self.header, originKey: Fixture.alice.publicKey, recipient: Fixture.bob)
    }
  }

  @Test("sealing checks keys against ids and the recipient list")
  func sealingChecks() {
    var random = SeededCryptoRandom(repeating: 1)
    let keys = [Fixture.bob.publicKey, Fixture.carol.publicKey]
    #expect(throws: EnvelopeError.recipientKeyMismatch(recipient: Fixture.bob.peerID, keyOwner: Fixture.carol.peerID)) {
      try Envelope.seal([], header: Self.header, recipientKeys: keys.reversed(), origin: Fixture.alice, random: &random)
    }
    #expect(throws: EnvelopeError.originKeyMismatch(origin: Fixture.alice.peerID, keyOwner: Fixture.bob.peerID)) {
      try Envelope.seal([], header: Self.header, recipientKeys: keys, origin: Fixture.bob, random: &random)
    }
    var header = Self.header
    header.recipients = []
    #expect(throws: EnvelopeError.self) { try Envelope.seal([], header: header, recipientKeys: [], origin: Fixture.alice, random: &random) }
    header.recipients = [Fixture.bob.peerID, Fixture.bob.peerID]
    #expect(throws: EnvelopeError.invalidRecipients("a recipient is listed twice")) {
      try Envelope.seal([], header: header, recipientKeys: [Fixture.bob.publicKey, Fixture.bob.publicKey], origin: Fixture.alice, random: &random)
    }
    #expect(throws: EnvelopeError.bodyTooLarge(ProtocolLimits.maximumBodyLength + 1)) {
      try Envelope.seal(
        [UInt8](repeating: 0, count: ProtocolLimits.maximumBodyLength + 1), header: Self.header, recipientKeys: keys, origin: Fixture.alice,
        random: &random)
    }
  }

  @Test("a signed receipt round-trips and verifies only unaltered, with the recipient's key")
  func receipts() throws {
    let receipt = SignedReceipt(origin: Fixture.alice.peerID, messageIDs: [1, 2, 0xFFFF_FFFF_FFFF_FFFF], recipient: Fixture.bob)
    let bytes = receipt.encoded()
    #expect(bytes.count == 34 + 3 * 8 + 64)
    let decoded = try SignedReceipt(decoding: bytes)
    #expect(decoded == receipt)
    try decoded.verify(recipientKey: Fixture.bob.publicKey)
    #expect(throws: EnvelopeError.recipientKeyMismatch(recipient: Fixture.bob.peerID, keyOwner: Fixture.carol.peerID)) {
      try decoded.verify(recipientKey: Fixture.carol.publicKey)
    }
    for index in bytes.indices {
      var altered = bytes
      altered[index] ^= 0x10
      #expect(throws: EnvelopeError.self, "byte \(index)") {
        try SignedReceipt(decoding: altered).verify(recipientKey: Fixture.bob.publicKey)
      }
    }
    #expect(throws: EnvelopeError.malformedReceipt("count 0 is outside 1...8192")) {
      try SignedReceipt(decoding: Array(bytes[0..<32]) + [0, 0] + [UInt8](repeating: 0, count: 64))
    }
    #expect(throws: EnvelopeError.malformedReceipt("121 bytes for 3 ids (expected 122)")) { try SignedReceipt(decoding: Array(bytes.dropLast())) }
  }
}
