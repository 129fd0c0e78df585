import CNearbySystem
import Nearby
import NearbyCore
import NearbyTestSupport
import Testing

/// Each kind of bad input against the real listener: only the offending connection is
/// closed (with an ERROR where the spec says so) and the other sessions keep working.
@Suite("Bad input against the real listener")
struct BadInputTests {
  struct Attack: Sendable, CustomTestStringConvertible {
    let name: String
    /// The ERROR code the attacker should get, or nil when none can be sent.
    let expected: ErrorCode?
    let run: @Sendable (RawPeer) async throws -> Void
    var testDescription: String { name }
  }

  static let hello = Frame.hello(Frame.Hello(peer: Peer(id: PeerID.random(), name: try! DisplayName("mallory"))))

  static let attacks: [Attack] = [
    Attack(name: "garbage bytes (an HTTP request)", expected: .frameTooLarge) { $0.write(Array("GET / HTTP/1.1\r\nHost: x\r\n\r\n".utf8)) },
    Attack(name: "a length prefix over the maximum", expected: .frameTooLarge) { $0.write([0x00, 0x30, 0x00, 0x00, 0x05]) },
    Attack(name: "a zero length", expected: .malformedFrame) { $0.write([0, 0, 0, 0]) },
    Attack(name: "a frame before HELLO", expected: .unexpectedFrame) { $0.write(.ping(nonce: 1)) },
    Attack(name: "an unknown frame type", expected: .unknownFrameType) { $0.write([0, 0, 0, 3, 0x42, 1, 2]) },
    Attack(name: "a HELLO with an invalid name", expected: .invalidHello) { raw in
      var bytes = FrameEncoder.encode(Self.hello)
      bytes[bytes.count - 1] = 0x1B  // ESC inside the name
      raw.write(bytes)
    },
    Attack(name: "a connection that sends nothing", expected: .handshakeTimeout) { _ in },
    Attack(name: "one byte at a time, slowly", expected: .handshakeTimeout) { raw in
      for byte in FrameEncoder.encode(Self.hello) {
        raw.write([byte])
        try await Task.sleep(for: .milliseconds(40))
      }
    },
    Attack(name: "a flood of invitations on one connection", expected: .unexpectedFrame) { raw in
      raw.write(Self.hello)
      for id in 0..<50 { raw.write(.invite(Frame.Invite(invitationID: UInt64(id), timeoutMilliseconds: 30_000, context: []))) }
    },
    Attack(name: "a truncated frame, then close", expected: nil) { raw in
      raw.write(Array(FrameEncoder.encode(Self.hello).prefix(10)))
      raw.shutdownWrite()
    },
    Attack(name: "a spoofed sender after connecting", expected: .malformedFrame) { raw in
      raw.write(Self.hello)
      raw.write(.invite(Frame.Invite(invitationID: 1, timeoutMilliseconds: 30_000, context: [])))
      raw.write(.message(Frame.Message(id: 1, sender: PeerID.random(), timestamp: 0, recipients: [], body: [1])))
    },
  ]

  @Test("only the offending connection is closed", arguments: attacks)
  func attack(_ attack: Attack) async throws {
    var timeouts = ConnectionTimeouts()
    timeouts.handshake = .milliseconds(400)
    let alice = try await RunningSession.start("alice", policy: .all) { $0.timeouts = timeouts }
    let bob = try await RunningSession.start("bob")
    try await connect(bob, alice)

    let raw = try RawPeer(port: alice.port)
    try await attack.run(raw)
    let (frames, closed) = await raw.readUntilClosed()
    #expect(closed, "the connection was not closed")
    if let expected = attack.expected {
      let codes = frames.compactMap { if case .error(let code, _) = $0 { code } else { nil } }
      #expect(codes == [expected], "frames: \(frames)")
    }

    // Bob's session with alice is unaffected.
    let id = try await bob.session.send(Array("still here".utf8), to: .peers([alice.peer.id]))
    let message = try await alice.expect("message from bob") { if case .message(let m) = $0 { m } else { nil } }
    #expect(message.id == id)
    _ = try await bob.expect("delivered") { if case .delivered(id, _) = $0 { true } else { nil } }
    try await bob.stop()
    try await alice.stop()
  }

  @Test func aFloodOfConnectionsIsRefusedBusyAndCostsBoundedMemory() async throws {
    var timeouts = ConnectionTimeouts()
    timeouts.handshake = .seconds(3)
    let alice = try await RunningSession.start("alice", policy: .all) { $0.timeouts = timeouts }
    let bob = try await RunningSession.start("bob")
    try await connect(bob, alice)
    let before = nearby_resident_bytes()

    var flood: [RawPeer] = []
    for _ in 0..<300 { flood.append(try RawPeer(port: alice.port)) }
    // The connections beyond the limit are refused at once with ERROR busy.
    let last = await flood[299].readUntilClosed()
    #expect(last.closed)
    #expect(last.frames.contains { if case .error(.busy, _) = $0 { true } else { false } })

    let id = try await bob.session.send(Array("during the flood".utf8), to: .all)
    _ = try await bob.expect("delivered during the flood") { if case .delivered(id, _) = $0 { true } else { nil } }
    let growth = nearby_resident_bytes() - before
    #expect(growth < 64 << 20, "resident memory grew by \(growth) bytes")
    flood.removeAll()

    // Once the flood is gone (its sockets closed and their EOFs processed), new peers get in
    // again: a first attempt may still meet ERROR busy, so try for a while.
    let carol = try await RunningSession.start("carol")
    let deadline = ContinuousClock.now + .seconds(15)
    var connected = false
    while !connected, ContinuousClock.now < deadline {
      try await Task.sleep(for: .milliseconds(200))
      await carol.session.invite(endpoints: [alice.endpoint])
      let outcome = try await carol.expect("an outcome") {
        switch $0 {
        case .connected: true
        case .error, .disconnected: false
        default: nil
        }
      }
      connected = outcome
    }
    #expect(connected)
    try await carol.stop()
    try await bob.stop()
    try await alice.stop()
  }
}
