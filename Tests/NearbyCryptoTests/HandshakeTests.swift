import NearbyCore
import Testing

@testable import NearbyCrypto

@Suite("Handshake: successful runs")
struct HandshakeTests {
  @Test("a direct handshake authenticates both sides and agrees on keys, code and transcript")
  func direct() throws {
    var (initiator, responder) = Fixture.pair()
    let run = drive(&initiator, &responder)
    let a = try #require(run.initiator)
    let b = try #require(run.responder)
    #expect(a.remotePeerID == Fixture.bob.peerID)
    #expect(b.remotePeerID == Fixture.alice.peerID)
    #expect(a.remotePublicKey == Fixture.bob.publicKey)
    #expect(b.remotePublicKey == Fixture.alice.publicKey)
    #expect(a.remotePayload == Fixture.bobPayload)
    #expect(b.remotePayload == Fixture.alicePayload)
    #expect(a.sendKey.copiedBytes == b.receiveKey.copiedBytes)
    #expect(a.receiveKey.copiedBytes == b.sendKey.copiedBytes)
    #expect(a.sendKey.copiedBytes != a.receiveKey.copiedBytes)
    #expect(a.verificationCode == b.verificationCode)
    #expect(a.verificationCode.digits.count == 6)
    #expect(a.transcriptHash == b.transcriptHash)
    #expect(initiator.state == .completed)
    #expect(responder.state == .completed)
    #expect(initiator.verificationCode == a.verificationCode)
  }

  @Test("fresh ephemerals give fresh keys and (almost always) fresh codes")
  func freshSessions() throws {
    let first = Fixture.cleanRun(seed: 1)
    let second = Fixture.cleanRun(seed: 2)
    #expect(first.initiator.sendKey.copiedBytes != second.initiator.sendKey.copiedBytes)
    #expect(first.initiator.transcriptHash != second.initiator.transcriptHash)
    #expect(first.initiator.verificationCode != second.initiator.verificationCode)
    #expect(first.messages[0] != second.messages[0])
  }

  @Test("every message split at every byte, and byte by byte, gives the same result", arguments: 1...4)
  func splits(step: Int) throws {
    let reference = Fixture.cleanRun()
    let length = reference.messages[step - 1].count
    for index in 0...length {
      var (initiator, responder) = Fixture.pair()
      let run = drive(&initiator, &responder) { current, bytes in current == step ? split(bytes, at: index) : [bytes[...]] }
      let result = try #require(run.initiator, "split of message \(step) at \(index): \(String(describing: run.initiatorError))")
      #expect(result.transcriptHash == reference.initiator.transcriptHash)
      #expect(run.responder?.transcriptHash == reference.responder.transcriptHash)
    }
    var (initiator, responder) = Fixture.pair()
    let run = drive(&initiator, &responder) { _, bytes in byteByByte(bytes) }
    #expect(run.initiator?.transcriptHash == reference.initiator.transcriptHash)
    #expect(run.responder?.sendKey.copiedBytes == reference.responder.sendKey.copiedBytes)
  }

  @Test("records that arrive with message 4 are handed over as remaining bytes")
  func remainingBytes() throws {
    var (initiator, responder) = Fixture.pair()
    let m1 = initiator.start().send
    let m2 = responder.receive(m1).send
    let m3 = initiator.receive(m2).send
    let done = responder.receive(m3)
    let responderResult = try #require(done.result)
    var records: [UInt8] = []
    responderResult.makeSealer().seal(Array("first frames".utf8), into: &records)
    let output = initiator.receive(done.send + records)
    let initiatorResult = try #require(output.result)
    #expect(output.remainingBytes == records)
    let opener = initiatorResult.makeOpener()
    opener.append(output.remainingBytes)
    #expect(try opener.next() == Array("first frames".utf8))
  }

  @Test("a second sealer from one handshake (which would reuse nonces) traps, also through a copy")
  func oneSealer() async {
    await #expect(processExitsWith: .failure) {
      let result = Fixture.cleanRun().initiator
      let copy = result
      _ = result.makeSealer()
      _ = copy.makeSealer()
    }
  }

  @Test("the initiator may dial without an expected id")
  func noExpectation() throws {
    var (initiator, responder) = Fixture.pair(expecting: nil)
    let run = drive(&initiator, &responder)
    #expect(run.initiator?.remotePeerID == Fixture.bob.peerID)
  }

  static let announcements: [(CipherSet, CipherSet)] = [
    (.chacha20Poly1305, .chacha20Poly1305), ([.chacha20Poly1305, .aes256GCM], .chacha20Poly1305),
    (.chacha20Poly1305, [.chacha20Poly1305, .aes256GCM]), ([.chacha20Poly1305, .aes256GCM], [.chacha20Poly1305, .aes256GCM]),
  ]

  @Test("cipher negotiation: AES-256-GCM only when both announce it", arguments: announcements)
  func negotiation(initiatorCiphers: CipherSet, responderCiphers: CipherSet) throws {
    try #require(RecordCipher.aes256GCM.isAvailable, "AES-256-GCM is not available on this CPU")
    var (initiator, responder) = Fixture.pair(initiatorCiphers: initiatorCiphers, responderCiphers: responderCiphers)
    let run = drive(&initiator, &responder)
    let expected: RecordCipher = initiatorCiphers.contains(.aes256GCM) && responderCiphers.contains(.aes256GCM) ? .aes256GCM : .chacha20Poly1305
    #expect(run.initiator?.cipher == expected)
    #expect(run.responder?.cipher == expected)
    // And records flow with it.
    var bytes: [UInt8] = []
    try #require(run.initiator).makeSealer().seal([1, 2, 3], into: &bytes)
    let opener = try #require(run.responder).makeOpener()
    opener.append(bytes)
    #expect(try opener.next() == [1, 2, 3])
  }

  @Test("the verification code depends only on what precedes the reveal, not on identities or payloads")
  func codeFixedBeforeIdentities() throws {
    // Same ephemerals, different responder identity and payload: a man in the middle who
    // controls message 4 cannot steer the code with it.
    func run(responder identity: IdentityKeyPair, payload: [UInt8]) throws -> HandshakeResult {
      let ephemeralI = EphemeralKeyPair(secretKey: SecretBytes([UInt8](repeating: 7, count: 32)))
      let ephemeralR = EphemeralKeyPair(secretKey: SecretBytes([UInt8](repeating: 9, count: 32)))
      var initiator = Handshake(
        role: .initiator(expecting: nil), identity: Fixture.alice, payload: [], ciphers: .chacha20Poly1305, ephemeral: ephemeralI)
      var responder = Handshake(role: .responder, identity: identity, payload: payload, ciphers: .chacha20Poly1305, ephemeral: ephemeralR)
      return try #require(drive(&initiator, &responder).initiator)
    }
    let withBob = try run(responder: Fixture.bob, payload: Fixture.bobPayload)
    let withCarol = try run(responder: Fixture.carol, payload: Array("anything at all".utf8))
    #expect(withBob.verificationCode == withCarol.verificationCode)
    #expect(withBob.transcriptHash != withCarol.transcriptHash)
    #expect(withBob.receiveKey.copiedBytes != withCarol.receiveKey.copiedBytes)
  }

  @Test("codes are formatted as six digits, zero-padded, and grouped for reading aloud")
  func codeFormat() {
    let code = VerificationCode(codeTranscript: [UInt8](repeating: 0, count: 32))
    #expect(code.digits.count == 6)
    #expect(code.digits.allSatisfy { $0.isNumber })
    #expect(code.grouped == code.digits.prefix(3) + " " + code.digits.suffix(3))
    #expect(UInt32(code.digits) == code.value)
  }
}
