import NearbyCore
import Testing

@testable import NearbyCrypto

@Suite("Handshake: order, replay, size and protocol version 1 peers")
struct HandshakeOrderTests {
  @Test("a message out of order is unexpectedMessage, answered with ERROR unexpectedFrame")
  func wrongOrder() {
    let messages = Fixture.cleanRun().messages
    // Responder waiting for 1 gets 3; waiting for 1 gets 2 or 4.
    for (message, step) in [(messages[2], UInt8(3)), (messages[1], 2), (messages[3], 4)] {
      var (_, responder) = Fixture.pair()
      let output = responder.receive(message)
      #expect(output.error == .unexpectedMessage(step: step, expectedStep: 1))
      #expect(errorCode(output.send) == .unexpectedFrame)
    }
    // Initiator waiting for 2 gets 1 (its own message reflected) or 4.
    for (message, step) in [(messages[0], UInt8(1)), (messages[3], 4)] {
      var (initiator, _) = Fixture.pair()
      _ = initiator.start()
      #expect(initiator.receive(message).error == .unexpectedMessage(step: step, expectedStep: 2))
    }
  }

  @Test("a replayed message is refused: twice in a session, or from an older session")
  func replay() {
    let old = Fixture.cleanRun(seed: 1).messages
    // Message 1 again, after the responder answered it.
    var (initiator, responder) = Fixture.pair(seed: 2)
    let message1 = initiator.start().send
    _ = responder.receive(message1)
    #expect(responder.receive(message1).error == .unexpectedMessage(step: 1, expectedStep: 3))
    // Message 2 again, after the initiator answered it.
    (initiator, responder) = Fixture.pair(seed: 2)
    let message2 = responder.receive(initiator.start().send).send
    _ = initiator.receive(message2)
    #expect(initiator.receive(message2).error == .unexpectedMessage(step: 2, expectedStep: 4))
    // An old message 3 in a new session: the commitment does not match.
    (initiator, responder) = Fixture.pair(seed: 2)
    _ = responder.receive(initiator.start().send)
    #expect(responder.receive(old[2]).error == .commitmentMismatch)
    // An old messages 1 and 3 replayed together to a new responder: new ephemeral, no key.
    (_, responder) = Fixture.pair(seed: 2)
    _ = responder.receive(old[0])
    #expect(responder.receive(old[2]).error == .decryptFailed(step: 3))
    // An old message 4 to a new initiator.
    (initiator, responder) = Fixture.pair(seed: 2)
    _ = initiator.receive(responder.receive(initiator.start().send).send)
    #expect(initiator.receive(old[3]).error == .decryptFailed(step: 4))
  }

  @Test("a frame longer than the handshake limit is refused from its length prefix alone")
  func oversize() {
    for length: UInt32 in [UInt32(SecureProtocol.maximumHandshakeFrameLength) + 1, 0xFFFF_FFFF, 0] {
      var (_, responder) = Fixture.pair()
      var prefix: [UInt8] = []
      prefix.append(bigEndian: length)
      let output = responder.receive(prefix)
      #expect(output.error == .frameTooLarge(length: length))
      #expect(errorCode(output.send) == .frameTooLarge)
    }
    // The limit itself only waits for more bytes.
    var (_, responder) = Fixture.pair()
    var prefix: [UInt8] = []
    prefix.append(bigEndian: UInt32(SecureProtocol.maximumHandshakeFrameLength))
    #expect(responder.receive(prefix + [0x10]).error == nil)
    #expect(responder.state == .awaitingMessage(1))
  }

  @Test("messages of the wrong size and other frame types are refused")
  func malformed() {
    let message1 = Fixture.cleanRun().messages[0]
    var (_, responder) = Fixture.pair()
    let short = Array(message1.dropLast())
    var resized = short
    resized[3] -= 1
    #expect(responder.receive(resized).error == .malformedMessage(step: 1, reason: "it has 39 bytes instead of 40"))
    (_, responder) = Fixture.pair()
    #expect(responder.receive([0, 0, 0, 1, 0x10]).error == .malformedMessage(step: 1, reason: "the HANDSHAKE frame is empty"))
    (_, responder) = Fixture.pair()
    #expect(responder.receive(FrameEncoder.encode(.ping(nonce: 1))).error == .unexpectedFrame(type: 0x07, expectedStep: 1))
    (_, responder) = Fixture.pair()
    #expect(responder.receive([0, 0, 0, 1, 0x11]).error == .unexpectedFrame(type: 0x11, expectedStep: 1))
  }

  @Test("versions and ciphers without overlap are refused")
  func negotiationFailures() {
    var commit = HandshakeMessages.Commit(decodingUnchecked: Fixture.cleanRun().messages[0])
    commit.minimumVersion = 3
    commit.maximumVersion = 4
    var (_, responder) = Fixture.pair()
    var output = responder.receive(HandshakeForger.frame(commit.encoded()))
    #expect(output.error == .noCommonVersion(peerMinimum: 3, peerMaximum: 4))
    #expect(errorCode(output.send) == .unsupportedVersion)
    commit.minimumVersion = 1
    commit.ciphers = .aes256GCM
    (_, responder) = Fixture.pair()
    output = responder.receive(HandshakeForger.frame(commit.encoded()))
    #expect(output.error == .noCommonCipher(peer: .aes256GCM))
    #expect(errorCode(output.send) == .handshakeFailed)
    // Unknown cipher bits are ignored.
    commit.ciphers = CipherSet(rawValue: 0xF1)
    (_, responder) = Fixture.pair()
    #expect(responder.receive(HandshakeForger.frame(commit.encoded())).error == nil)
  }

  @Test("a v1 connector's HELLO gets ERROR unsupportedVersion, which the v1 machine reports as such")
  func version1Connector() throws {
    let v1Peer = Peer(id: PeerID(high: 1, low: 2), name: try DisplayName("old"))
    var v1 = ConnectionStateMachine(role: .connector(expecting: nil), hello: Frame.Hello(minVersion: 1, maxVersion: 1, peer: v1Peer), now: .zero)
    var (_, responder) = Fixture.pair()
    v1.start(now: .zero)
    let output = responder.receive(FrameEncoder.encode(.hello(Frame.Hello(minVersion: 1, maxVersion: 1, peer: v1Peer))))
    #expect(output.error == .peerSpeaksVersion1(.hello))
    let decoder = FrameDecoder()
    decoder.append(output.send)
    let frame = try #require(try decoder.next())
    let transition = v1.receive(frame, now: .zero)
    guard case .closed(.remoteError(let code, let message))? = transition.event else {
      Issue.record("the v1 machine reported \(String(describing: transition.event))")
      return
    }
    #expect(code == .unsupportedVersion)
    #expect(message.contains("upgrade Nearby"))
  }

  @Test("a v1 listener answers HANDSHAKE with ERROR unknownFrameType, reported as a v1 peer; its HELLO too")
  func version1Listener() throws {
    let v1Peer = Peer(id: PeerID(high: 1, low: 2), name: try DisplayName("old"))
    var v1 = ConnectionStateMachine(role: .listener, hello: Frame.Hello(minVersion: 1, maxVersion: 1, peer: v1Peer), now: .zero)
    v1.start(now: .zero)
    let v1Hello = FrameEncoder.encode(.hello(Frame.Hello(minVersion: 1, maxVersion: 1, peer: v1Peer)))
    var (initiator, _) = Fixture.pair()
    let decoder = FrameDecoder()
    decoder.append(initiator.start().send)
    var reply: Frame?
    do {
      _ = try decoder.next()
    } catch {
      reply = v1.receiveFailed(error, now: .zero).send
    }
    let answer = FrameEncoder.encode(try #require(reply))
    let output = initiator.receive(answer)
    guard case .peerSpeaksVersion1(.unknownFrameType)? = output.error else {
      Issue.record("got \(String(describing: output.error))")
      return
    }
    #expect(output.send.isEmpty, "no ERROR in answer to an ERROR")
    #expect(output.error!.description.contains("must upgrade"))
    // If the v1 HELLO arrives first instead:
    (initiator, _) = Fixture.pair()
    _ = initiator.start()
    let early = initiator.receive(v1Hello)
    #expect(early.error == .peerSpeaksVersion1(.hello))
    #expect(errorCode(early.send) == .unsupportedVersion)
  }

  @Test("an ERROR from the peer ends the handshake without an answer; EOF is connectionClosed")
  func remoteErrorAndEOF() {
    var (initiator, responder) = Fixture.pair()
    _ = initiator.start()
    let output = initiator.receive(FrameEncoder.encode(.error(code: .busy, message: "too many")))
    #expect(output.error == .remoteError(code: .busy, message: "too many"))
    #expect(output.send.isEmpty)
    #expect(initiator.receive([1, 2, 3]).error == nil, "bytes after a failure are ignored")
    let closed = responder.connectionClosed()
    #expect(closed.error == .connectionClosed(expectedStep: 1))
    #expect(closed.send.isEmpty)
  }

  func errorCode(_ bytes: [UInt8]) -> ErrorCode? {
    let decoder = FrameDecoder()
    decoder.append(bytes)
    guard case .error(let code, _)? = try? decoder.next() else { return nil }
    return code
  }
}

extension HandshakeMessages.Commit {
  /// Decodes a whole message-1 frame the test knows to be valid.
  init(decodingUnchecked frame: [UInt8]) {
    try! self.init(decoding: Array(frame.dropFirst(5)))
  }
}
