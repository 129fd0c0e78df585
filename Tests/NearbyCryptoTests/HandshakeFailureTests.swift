import NearbyCore
import Testing

@testable import NearbyCrypto

@Suite("Handshake: failures are typed, fail closed and answer with ERROR")
struct HandshakeFailureTests {
  typealias Knobs = HandshakeForger.IdentityKnobs

  /// The ERROR frame in `bytes`, decoded with the v1 decoder.
  func errorFrame(_ bytes: [UInt8]) -> (code: ErrorCode, message: String)? {
    let decoder = FrameDecoder()
    decoder.append(bytes)
    guard case .error(let code, let message)? = try? decoder.next() else { return nil }
    return (code, message)
  }

  /// A responder that received the forged message 1 and answered with message 2.
  func responderAfterMessage1(_ forger: inout HandshakeForger) -> (Handshake, [UInt8]) {
    var random = SeededCryptoRandom(repeating: 40)
    var responder = Handshake(role: .responder, identity: Fixture.bob, payload: [], ciphers: .chacha20Poly1305, random: &random)
    let message2 = responder.receive(forger.message1()).send
    return (responder, message2)
  }

  @Test("a tampered byte anywhere in any message stops the handshake before it completes", arguments: 1...4)
  func tamperEveryByte(step: Int) {
    let length = Fixture.cleanRun().messages[step - 1].count
    for index in 0..<length {
      for flip: UInt8 in [0x01, 0x80] {
        var (initiator, responder) = Fixture.pair()
        let run = drive(&initiator, &responder) { current, bytes in
          guard current == step else { return [bytes[...]] }
          var altered = bytes
          altered[index] ^= flip
          return [altered[...]]
        }
        let location = "message \(step), byte \(index), flip \(flip)"
        #expect(run.initiator == nil, "\(location): the initiator completed")
        if step < 4 { #expect(run.responder == nil, "\(location): the responder completed") }
        let receiverError = step % 2 == 1 ? run.responderError : run.initiatorError
        #expect(receiverError != nil, "\(location): the receiver did not fail")
      }
    }
  }

  @Test("a tampered message 3 is reported as decryptFailed; a tampered commitment as commitmentMismatch")
  func tamperCauses() {
    var (initiator, responder) = Fixture.pair()
    let body = drive(&initiator, &responder) { step, bytes in
      guard step == 3 else { return [bytes[...]] }
      var altered = bytes
      altered[60] ^= 1  // inside the sealed identity
      return [altered[...]]
    }
    #expect(body.responderError == .decryptFailed(step: 3))
    #expect(errorFrame(Array(body.responderSent.suffix(from: Fixture.cleanRun().messages[1].count)))?.code == .handshakeFailed)
    #expect(body.initiatorError == .remoteError(code: .handshakeFailed, message: HandshakeError.decryptFailed(step: 3).description))

    (initiator, responder) = Fixture.pair()
    let commitment = drive(&initiator, &responder) { step, bytes in
      guard step == 1 else { return [bytes[...]] }
      var altered = bytes
      altered[20] ^= 1  // inside the commitment
      return [altered[...]]
    }
    #expect(commitment.responderError == .commitmentMismatch)
  }

  @Test("the initiator refuses a responder whose key does not derive the expected id")
  func wrongPeer() {
    var (initiator, responder) = Fixture.pair(expecting: Fixture.bob.peerID, responder: Fixture.mallory)
    let run = drive(&initiator, &responder)
    #expect(run.initiatorError == .wrongPeer(expected: Fixture.bob.peerID, actual: Fixture.mallory.peerID))
    #expect(run.initiator == nil)
    let reply = errorFrame(Array(run.initiatorSent.suffix(from: Fixture.cleanRun().messages[0].count + Fixture.cleanRun().messages[2].count)))
    #expect(reply?.code == .wrongPeer)
    // The responder finished its half, so its record opener gets the plaintext ERROR.
    let opener = run.responder!.makeOpener()
    opener.append(FrameEncoder.encode(.error(code: .wrongPeer, message: "not you")))
    #expect(throws: RecordError.peerAborted(code: .wrongPeer, message: "not you")) { try opener.next() }
  }

  @Test("a responder claiming the expected peer's key without its secret fails on the signature")
  func impersonation() {
    var (initiator, _) = Fixture.pair(expecting: Fixture.bob.peerID)
    var forger = HandshakeForger(ephemeralSeed: 3)
    let message1 = initiator.start().send
    let message3 = initiator.receive(forger.message2(answering: message1)).send
    var knobs = Knobs.responder(Fixture.mallory)
    knobs.claimedKey = Fixture.bob.publicKey
    let output = initiator.receive(forger.message4(answering: message3, identity: knobs))
    #expect(output.error == .invalidSignature(step: 4))
    #expect(errorFrame(output.send)?.code == .handshakeFailed)
  }

  @Test("message 4 with a flipped signature bit, or signed as an initiator, fails on the signature")
  func badResponderSignature() {
    for mutate in [{ (knobs: inout Knobs) in knobs.flipSignatureBit = true }, { $0.label = SecureProtocol.Label.initiatorSignature }] {
      var (initiator, _) = Fixture.pair(expecting: nil)
      var forger = HandshakeForger(ephemeralSeed: 3)
      let message3 = initiator.receive(forger.message2(answering: initiator.start().send)).send
      var knobs = Knobs.responder(Fixture.bob)
      mutate(&knobs)
      #expect(initiator.receive(forger.message4(answering: message3, identity: knobs)).error == .invalidSignature(step: 4))
    }
    // The control: the forger's honest message 4 is accepted (the knobs are what fails).
    var (initiator, _) = Fixture.pair(expecting: Fixture.bob.peerID)
    var forger = HandshakeForger(ephemeralSeed: 3)
    let message3 = initiator.receive(forger.message2(answering: initiator.start().send)).send
    #expect(initiator.receive(forger.message4(answering: message3, identity: .responder(Fixture.bob))).result != nil)
  }

  @Test("message 3 with a bad signature, a borrowed key or a malformed block is refused by the responder")
  func badInitiatorIdentity() {
    var cases: [(Knobs, HandshakeError)] = []
    var flipped = Knobs.initiator(Fixture.alice)
    flipped.flipSignatureBit = true
    cases.append((flipped, .invalidSignature(step: 3)))
    var borrowed = Knobs.initiator(Fixture.mallory)
    borrowed.claimedKey = Fixture.alice.publicKey
    cases.append((borrowed, .invalidSignature(step: 3)))
    var reflected = Knobs.initiator(Fixture.alice)
    reflected.label = SecureProtocol.Label.responderSignature
    cases.append((reflected, .invalidSignature(step: 3)))
    var malformed = Knobs.initiator(Fixture.alice)
    malformed.rawBlock = Fixture.alice.publicKey.bytes + [0, 9] + [UInt8](repeating: 0, count: 64)
    cases.append((malformed, .malformedMessage(step: 3, reason: "the identity block announces a payload of 9 bytes but has 98 bytes in all")))
    cases.append((Knobs.initiator(Fixture.alice), .commitmentMismatch))  // revealed another key below
    for (index, (knobs, expected)) in cases.enumerated() {
      var forger = HandshakeForger(ephemeralSeed: 5)
      var (responder, message2) = responderAfterMessage1(&forger)
      let other = EphemeralKeyPair(secretKey: SecretBytes([UInt8](repeating: 6, count: 32))).publicKey
      let message3 = forger.message3(answering: message2, revealing: expected == .commitmentMismatch ? other : nil, identity: knobs)
      let output = responder.receive(message3)
      #expect(output.error == expected, "case \(index)")
      #expect(output.result == nil)
    }
    // The control: the honest forged message 3 completes.
    var forger = HandshakeForger(ephemeralSeed: 5)
    var (responder, message2) = responderAfterMessage1(&forger)
    #expect(responder.receive(forger.message3(answering: message2, identity: .initiator(Fixture.alice))).result?.remotePeerID == Fixture.alice.peerID)
  }

  @Test("a low-order ephemeral key is refused")
  func lowOrderEphemeral() {
    let zero = [UInt8](repeating: 0, count: 32)
    var forger = HandshakeForger(ephemeralSeed: 5)
    var random = SeededCryptoRandom(repeating: 40)
    var responder = Handshake(role: .responder, identity: Fixture.bob, payload: [], ciphers: .chacha20Poly1305, random: &random)
    let message2 = responder.receive(forger.message1(committingTo: zero)).send
    let output = responder.receive(forger.message3(answering: message2, revealing: zero, identity: .initiator(Fixture.alice)))
    #expect(output.error == .invalidEphemeralKey)
  }

  @Test("connecting to ourselves is detected")
  func connectedToSelf() {
    var (initiator, responder) = Fixture.pair(expecting: nil, responder: Fixture.alice)
    let run = drive(&initiator, &responder)
    #expect(run.responderError == .connectedToSelf)
    #expect(run.initiatorError == .remoteError(code: .wrongPeer, message: HandshakeError.connectedToSelf.description))
  }
}
