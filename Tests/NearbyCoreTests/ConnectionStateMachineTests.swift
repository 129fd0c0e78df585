import NearbyCore
import Testing

@Suite("Connection state machine: handshake, versions, timers")
struct ConnectionStateMachineTests {
  func listener(now: Duration = .zero, min: UInt8 = 1, max: UInt8 = 1) -> ConnectionStateMachine {
    var machine = ConnectionStateMachine(role: .listener, hello: Fixture.hello(Fixture.alice, min: min, max: max), now: now)
    machine.start(now: now)
    return machine
  }

  @Test(
    "version negotiation",
    arguments: [
      (1, 1, 1, 1, UInt8?(1)), (1, 3, 2, 5, 3), (1, 1, 2, 3, nil), (2, 4, 1, 1, nil), (1, 2, 1, 9, 2),
    ] as [(UInt8, UInt8, UInt8, UInt8, UInt8?)])
  func versions(localMin: UInt8, localMax: UInt8, remoteMin: UInt8, remoteMax: UInt8, expected: UInt8?) {
    var machine = listener(min: localMin, max: localMax)
    let transition = machine.receive(.hello(Fixture.hello(Fixture.bob, min: remoteMin, max: remoteMax)), now: .ms(1))
    if let expected {
      #expect(machine.version == expected)
      #expect(machine.state == .idle)
      #expect(transition.event == .helloReceived(Fixture.hello(Fixture.bob, min: remoteMin, max: remoteMax)))
    } else {
      guard case .error(.unsupportedVersion, let text)? = transition.send else {
        Issue.record("no unsupportedVersion error")
        return
      }
      #expect(text.contains("\(localMin)-\(localMax)") && text.contains("\(remoteMin)-\(remoteMax)"))
      #expect(transition.close == .shutdownAndLinger)
    }
  }

  @Test func helloFromOurselvesOrTheWrongPeerIsRefused() {
    var machine = listener()
    guard case .error(.wrongPeer, _)? = machine.receive(.hello(Fixture.hello(Fixture.alice)), now: .ms(1)).send else {
      Issue.record("own id accepted")
      return
    }
    var connector = ConnectionStateMachine(role: .connector(expecting: Fixture.carolID), hello: Fixture.hello(Fixture.alice), now: .zero)
    connector.start(now: .zero)
    guard case .error(.wrongPeer, let text)? = connector.receive(.hello(Fixture.hello(Fixture.bob)), now: .ms(1)).send else {
      Issue.record("wrong peer accepted")
      return
    }
    #expect(text.contains(Fixture.carolID.hex))
  }

  @Test func handshakeTimeout() {
    var machine = listener()
    #expect(machine.nextDeadline == .seconds(5))
    #expect(machine.tick(now: .ms(4999)).send == nil)
    let transition = machine.tick(now: .seconds(5))
    guard case .error(.handshakeTimeout, _)? = transition.send else {
      Issue.record("no handshakeTimeout")
      return
    }
    #expect(transition.event == .closed(.handshakeTimeout))
    // Linger, then close.
    #expect(machine.tick(now: .ms(6000)).close == nil)
    #expect(machine.tick(now: .ms(7000)).close == .now)
    #expect(machine.state == .closed)
  }

  @Test func aPeerTricklingBytesStillTimesOutTheHandshake() {
    // Bytes that never complete a frame do not reach the machine at all: only the clock does.
    var machine = listener()
    for second in 1...4 { #expect(machine.tick(now: .seconds(Int64(second))).send == nil) }
    #expect(machine.tick(now: .seconds(5)).close == .shutdownAndLinger)
  }

  @Test func idleListenerWithoutInviteSaysGoodbye() {
    var machine = listener()
    _ = machine.receive(.hello(Fixture.hello(Fixture.bob)), now: .ms(1))
    var time = Duration.ms(1)
    var goodbye: ConnectionTransition?
    while time < .seconds(12), goodbye == nil {
      time += .ms(250)
      // Keep the peer alive so only the idle timer can fire.
      _ = machine.receive(.ping(nonce: 1), now: time)
      let transition = machine.tick(now: time)
      if case .goodbye(.idle)? = transition.send { goodbye = transition }
    }
    #expect(goodbye != nil)
    #expect(time >= .seconds(10))
  }

  @Test func heartbeatPingsWhenSilentAndMeasuresRoundTrip() {
    var machine = listener()
    _ = machine.receive(.hello(Fixture.hello(Fixture.bob)), now: .ms(10))
    _ = machine.receive(.invite(Frame.Invite(invitationID: 1, timeoutMilliseconds: 1000, context: [])), now: .ms(10))
    _ = machine.accept(now: .ms(10))
    #expect(machine.nextDeadline == .ms(1010))
    let ping = machine.tick(now: .ms(1010))
    guard case .ping(let nonce)? = ping.send else {
      Issue.record("no ping")
      return
    }
    #expect(machine.receive(.pong(nonce: nonce), now: .ms(1013)).event == .roundTrip(.ms(3)))
    machine.noteSent(now: .ms(1500))
    #expect(machine.tick(now: .ms(2100)).send == nil)
    #expect(machine.tick(now: .ms(2500)).send != nil)
  }

  @Test func deadPeerAfterFourSecondsOfSilence() {
    var machine = listener()
    _ = machine.receive(.hello(Fixture.hello(Fixture.bob)), now: .zero)
    _ = machine.receive(.invite(Frame.Invite(invitationID: 1, timeoutMilliseconds: 1000, context: [])), now: .zero)
    _ = machine.accept(now: .zero)
    var time = Duration.zero
    var closed: ConnectionTransition?
    while closed == nil, time < .seconds(10) {
      time += .ms(100)
      let transition = machine.tick(now: time)
      if transition.close != nil { closed = transition }
    }
    #expect(time == .seconds(4))
    #expect(closed?.event == .closed(.timedOut(silentFor: .seconds(4))))
    #expect(closed?.close == .now)
  }

  @Test func decodingErrorsSendTheirErrorCode() {
    var machine = listener()
    let transition = machine.receiveFailed(.frameTooLarge(length: 1 << 30), now: .ms(1))
    guard case .error(.frameTooLarge, _)? = transition.send else {
      Issue.record("no error frame")
      return
    }
    #expect(transition.close == .shutdownAndLinger)
    var truncated = listener()
    let eof = truncated.receiveFailed(.truncated(bufferedBytes: 3), now: .ms(1))
    #expect(eof.send == nil)
    #expect(eof.close == .now)
  }

  @Test func messageSenderMustBeTheConnectionsPeer() {
    var machine = listener()
    _ = machine.receive(.hello(Fixture.hello(Fixture.bob)), now: .zero)
    _ = machine.receive(.invite(Frame.Invite(invitationID: 1, timeoutMilliseconds: 1000, context: [])), now: .zero)
    _ = machine.accept(now: .zero)
    let spoofed = Frame.Message(id: 1, sender: Fixture.carolID, timestamp: 0, recipients: [], body: [])
    guard case .error(.malformedFrame, let text)? = machine.receive(.message(spoofed), now: .ms(1)).send else {
      Issue.record("spoofed sender accepted")
      return
    }
    #expect(text.contains("sender"))
  }
}
