import NearbyCore
import Testing

/// What a relay can and cannot do to messages it carries (PROTOCOL.md, end-to-end
/// envelopes and signed receipts), on the simulated network: alice — r1 — carol, with r1
/// played by the test where it misbehaves. The stand-in cryptography (``SimulatedEndToEnd``)
/// catches any changed byte; the real one is tested with real sessions.
@Suite("Relays cannot read, alter or invent what they carry")
struct RelayEndToEndTests {
  static let r1 = RelayStateMachineTests.r1
  let a = Fixture.aliceID
  let c = Fixture.carolID

  func network() -> SimulatedNetwork {
    let net = RelayStateMachineTests().network()
    return net
  }

  /// An envelope alice really sent to carol (through r1), and the frame r1 would forward.
  func sealed(_ body: [UInt8], id: UInt64, to recipients: [PeerID], toEveryone: Bool = false) -> Frame.Message {
    let header = EnvelopeHeader(origin: a, messageID: id, timestamp: 5, recipients: recipients)
    let envelope = try! SimulatedEndToEnd(local: a).seal(
      body, header: header, toEveryone: toEveryone, recipientKeys: recipients.map { SimulatedNetwork.key(of: $0) }
    ).get()
    return Frame.Message(id: id, sender: a, timestamp: 5, hopLimit: 7, recipients: recipients, body: envelope)
  }

  /// Frames "from r1" arriving at carol.
  func fromRelay(_ net: inout SimulatedNetwork, _ frames: [Frame]) {
    net.act(c) { m, x, now in m.received(frames, on: m.sessionConnection(Self.r1.id)!, now: now, into: &x) }
    net.run()
  }

  @Test func whatARelayCarriesIsSealedAndArrivesIntact() {
    var net = network()
    _ = net.take(c)
    net.act(a) { m, x, now in _ = m.send(Array("for carol only".utf8), to: .peers([c]), timestamp: 9, now: now, into: &x) }
    net.run()
    // The frame r1 forwarded to carol holds an envelope, not the text.
    let forwarded = net.framesSent.filter { $0.key.node == Self.r1.id }.values.joined().compactMap { frame -> Frame.Message? in
      if case .message(let message) = frame { message } else { nil }
    }
    #expect(forwarded.count == 1)
    #expect(forwarded.first.map { !$0.body.elementsEqual(Array("for carol only".utf8)) } == true)
    #expect(forwarded.first?.recipients == [c])
    let events = net.take(c)
    guard case .message(let message)? = events.first(where: { $0.kind == "message" }) else {
      Issue.record("carol got \(events)")
      return
    }
    #expect(message.body == Array("for carol only".utf8))
    #expect(message.isPrivate)
    #expect(message.from == Fixture.alice)
  }

  @Test func aMessageToEveryoneThroughARelayIsMarkedSoInItsSignedEnvelope() {
    var net = network()
    _ = net.take(c)
    net.act(a) { m, x, now in _ = m.send([1, 2, 3], to: .all, timestamp: 9, now: now, into: &x) }
    net.run()
    let messages = net.take(c).compactMap { event -> ReceivedMessage? in if case .message(let m) = event { m } else { nil } }
    #expect(messages.map(\.isPrivate) == [false])
  }

  @Test("a relay that changes a byte of the envelope or of the fields it covers is caught", arguments: [0, 1, 2, 3])
  func alteredMessagesAreDroppedAndReported(field: Int) {
    var net = network()
    _ = net.take(c)
    var message = sealed(Array("pay bob 10".utf8), id: 500, to: [c])
    switch field {
    case 0: message.body[3] ^= 0x01
    case 1: message.timestamp += 1
    case 2: message.id += 1
    default: message.body.removeLast()
    }
    fromRelay(&net, [.message(message)])
    let events = net.take(c)
    #expect(!events.contains { $0.kind == "message" }, "\(events)")
    #expect(
      events.contains { if case .error(.relayTampered(let relay, let origin, _)) = $0 { relay?.id == Self.r1.id && origin == a } else { false } })
    #expect(net.nodes[c]!.relayStatistics.forgeriesDropped == 1)
  }

  @Test func aRelayCannotInventAMessageFromAnotherPeer() {
    var net = network()
    _ = net.take(c)
    // r1 writes "alice: ..." itself, with a plaintext body: it has no envelope from alice.
    let invented = Frame.Message(id: 600, sender: a, timestamp: 1, recipients: [c], body: Array("hi, it is alice".utf8))
    fromRelay(&net, [.message(invented)])
    let events = net.take(c)
    #expect(!events.contains { $0.kind == "message" })
    #expect(events.contains { if case .error(.relayTampered) = $0 { true } else { false } })
  }

  @Test func aForgedCopyDoesNotMakeTheRealMessageLookLikeADuplicate() {
    var net = network()
    _ = net.take(c)
    var forged = sealed(Array("real".utf8), id: 700, to: [c])
    forged.body[4] ^= 0xFF
    fromRelay(&net, [.message(forged), .message(sealed(Array("real".utf8), id: 700, to: [c]))])
    let texts = net.take(c).compactMap { event -> String? in
      if case .message(let m) = event { String(decoding: m.body, as: UTF8.self) } else { nil }
    }
    #expect(texts == ["real"])
  }

  @Test func receiptsThroughARelayMustCarryTheRecipientsSignature() {
    var net = network()
    _ = net.take(a)
    net.act(c) { m, x, now in
      m.received(
        [.roster(Frame.Roster(kind: .add, entries: []))], on: m.sessionConnection(Self.r1.id)!, now: now, into: &x)
    }
    // Alice sends to carol, but r1 swallows the message and forges carol's receipt.
    net.slowApplications.insert(c)
    var id: MessageID = 0
    net.act(a) { m, x, now in id = m.send([9], to: .peers([c]), timestamp: 0, now: now, into: &x) }
    net.run()
    let relayToAlice = net.nodes[a]!.sessionConnection(Self.r1.id)!
    for signature in [nil, [UInt8](repeating: 7, count: 64)] as [[UInt8]?] {
      let forged = Frame.Delivered(origin: a, recipient: c, ids: [id.rawValue], signature: signature)
      net.act(a) { m, x, now in m.received([.delivered(forged)], on: relayToAlice, now: now, into: &x) }
    }
    var events = net.take(a)
    #expect(!events.contains { $0.kind == "delivered" }, "\(events)")
    #expect(events.filter { if case .error(.relayTampered) = $0 { true } else { false } }.count == 2)
    // Carol's real, signed receipt is accepted.
    net.take(messagesAt: c)
    net.run()
    events = net.take(a)
    #expect(events.contains(.delivered(messageID: id, to: Fixture.carol)), "\(events)")
  }

  /// A peer that is not a relay writes an UNDELIVERABLE about alice's message to carol and
  /// sends it to their relay: the relay does not pass it on (alice's message would have been
  /// reported failed, and carol's real receipt ignored).
  @Test func aReportFromAPeerThatIsNotARelayIsNotPassedOn() {
    var net = network()
    _ = net.take(a)
    net.slowApplications.insert(c)
    var id: MessageID = 0
    net.act(a) { m, x, now in id = m.send([9], to: .peers([c]), timestamp: 0, now: now, into: &x) }
    net.run()
    let forged = Frame.Undeliverable(origin: a, messageID: id.rawValue, recipient: c, reason: .unknownRecipient)
    net.act(Self.r1.id) { m, x, now in m.received([.undeliverable(forged)], on: m.sessionConnection(c)!, now: now, into: &x) }
    net.run()
    var events = net.take(a)
    #expect(!events.contains { if case .error(.undelivered) = $0 { true } else { false } }, "\(events)")
    net.take(messagesAt: c)
    net.run()
    events = net.take(a)
    #expect(events.contains(.delivered(messageID: id, to: Fixture.carol)), "\(events)")
  }

  /// A report about a direct message counts only from its recipient, on their session: one
  /// that comes through a relay about it is ignored.
  @Test func aDirectMessageFailsOnlyByItsRecipientsWord() {
    var net = network()
    net.act(a) { m, x, now in m.invite(c, context: [], now: now, into: &x) }
    net.run()
    _ = net.take(a)
    net.slowApplications.insert(c)
    var id: MessageID = 0
    net.act(a) { m, x, now in id = m.send([5], to: .peers([c]), timestamp: 0, now: now, into: &x) }
    net.run()
    #expect(net.nodes[a]!.sessionConnection(c) != nil, "alice and carol have a session")
    let report = Frame.Undeliverable(origin: a, messageID: id.rawValue, recipient: c, reason: .queueFull)
    net.act(a) { m, x, now in m.received([.undeliverable(report)], on: m.sessionConnection(Self.r1.id)!, now: now, into: &x) }
    #expect(!net.take(a).contains { if case .error(.undelivered) = $0 { true } else { false } })
    net.take(messagesAt: c)
    net.run()
    #expect(net.take(a).contains(.delivered(messageID: id, to: Fixture.carol)))
  }

  @Test func aRosterThatGivesAPeerAnotherKeyIsRefused() {
    var net = network()
    _ = net.take(a)
    let dave = Peer(id: PeerID(hex: "0000000000000000000000000000dddd")!, name: try! DisplayName("dave"))
    let wrongKey = SimulatedNetwork.key(of: Self.r1.id)  // the relay's own key, for dave's id
    net.act(a) { m, x, now in
      m.received(
        [.roster(Frame.Roster(kind: .add, entries: [Frame.Roster.Entry(peer: dave, hops: 1, publicKey: wrongKey)]))],
        on: m.sessionConnection(Self.r1.id)!, now: now, into: &x)
    }
    let events = net.take(a)
    #expect(!events.contains { $0.kind == "reachable" })
    #expect(events.contains { if case .error(.relayTampered(_, let origin, _)) = $0 { origin == dave.id } else { false } })
    var refusal: SendError?
    net.act(a) { m, x, now in
      do throws(SendError) {
        try m.sendMessage([1], to: .peers([dave.id]), timestamp: 0, now: now, into: &x)
      } catch {
        refusal = error
      }
    }
    #expect(refusal == .notConnected([dave.id]))
  }

  /// A relay that gives 4 096 peers keys that are not theirs, in each of 8 rosters: every
  /// one is refused and counted, but only the first reports are events (an event each was
  /// 32 768 events, outside any flow control); the next one shown, a second later, says
  /// how many were not.
  @Test func aFloodOfForgedRosterEntriesIsCountedNotShownOneByOne() {
    var net = network()
    _ = net.take(a)
    let wrongKey = SimulatedNetwork.key(of: Self.r1.id)
    let before = net.nodes[a]!.relayStatistics.forgeriesDropped
    for round in 0..<8 {
      let entries = (0..<ProtocolLimits.maximumRosterEntries).map { index in
        Frame.Roster.Entry(
          peer: Peer(id: PeerID(high: UInt64(round + 1), low: UInt64(index + 1)), name: try! DisplayName("p\(index)")), hops: 1, publicKey: wrongKey)
      }
      net.act(a) { m, x, now in
        m.received([.roster(Frame.Roster(kind: .add, entries: entries))], on: m.sessionConnection(Self.r1.id)!, now: now, into: &x)
      }
    }
    #expect(net.nodes[a]!.relayStatistics.forgeriesDropped - before == 8 * ProtocolLimits.maximumRosterEntries)
    let reports = net.take(a).filter { if case .error(.relayTampered) = $0 { true } else { false } }
    #expect(reports.count == SessionStateMachine.tamperingReports.burst)
    net.advance(by: .seconds(1))
    let wrong = Frame.Roster.Entry(peer: Peer(id: PeerID(high: 99, low: 1), name: try! DisplayName("late")), hops: 1, publicKey: wrongKey)
    net.act(a) { m, x, now in
      m.received([.roster(Frame.Roster(kind: .add, entries: [wrong]))], on: m.sessionConnection(Self.r1.id)!, now: now, into: &x)
    }
    let next = net.take(a).compactMap { event -> String? in if case .error(.relayTampered(_, _, let detail)) = event { detail } else { nil } }
    let hidden = 8 * ProtocolLimits.maximumRosterEntries - SessionStateMachine.tamperingReports.burst
    #expect(next.count == 1)
    #expect(next.first?.contains("and \(hidden) more from this relay that were not shown") == true, "\(next)")
    #expect(net.connectedNames(a) == ["r1"])
  }

  @Test func aDirectPeerThatIsNotARelayCannotPassOnOthersMessages() {
    var net = SimulatedNetwork()
    net.add(Fixture.alice, policy: .all)
    net.add(Fixture.bob, policy: .all)
    net.discoverAll()
    net.act(a) { m, x, now in m.invite(Fixture.bobID, context: [], now: now, into: &x) }
    net.run()
    _ = net.take(a)
    let spoofed = Frame.Message(id: 1, sender: Fixture.carolID, timestamp: 0, recipients: [a], body: [1])
    net.act(a) { m, x, now in m.received([.message(spoofed)], on: m.sessionConnection(Fixture.bobID)!, now: now, into: &x) }
    net.run()
    let events = net.take(a)
    #expect(!events.contains { $0.kind == "message" })
    #expect(events.contains { $0.kind == "disconnected" }, "\(events)")
  }

  @Test func verificationCodesAreShownOnBothSidesAndTheKnownPolicyAcceptsOnlyVerifiedPeers() {
    var net = SimulatedNetwork()
    net.add(Fixture.alice, policy: .all)
    net.add(Fixture.bob, policy: .known) { $0.verifiedPeers = [Fixture.aliceID] }
    net.add(Fixture.carol, policy: .all)
    net.discoverAll()
    net.act(a) { m, x, now in m.invite(Fixture.bobID, context: [], now: now, into: &x) }
    net.act(c) { m, x, now in m.invite(Fixture.bobID, context: [], now: now, into: &x) }
    net.run()
    #expect(net.take(a).contains { if case .connected(_, let security) = $0 { security.verificationCode == "123456" } else { false } })
    #expect(net.take(c).contains(.declined(Fixture.bob, .notAllowed)))
    let bobEvents = net.take(Fixture.bobID)
    #expect(bobEvents.contains { if case .connected(let peer, let security) = $0 { peer == Fixture.alice && security.isVerified } else { false } })
    net.act(a) { m, x, _ in m.requestVerification(Fixture.bobID, into: &x) }
    net.run()
    #expect(net.take(a) == [.verification(Fixture.bob, code: "123456", askedByPeer: false)])
    #expect(net.take(Fixture.bobID) == [.verification(Fixture.alice, code: "123456", askedByPeer: true)])
  }

  /// A peer that repeats VERIFY is shown once per interval: each request used to be an event
  /// of its own, and a flood of 5-byte frames filled the event sequence.
  @Test func repeatedVerificationRequestsAreShownOncePerInterval() {
    var net = SimulatedNetwork()
    net.add(Fixture.alice, policy: .all)
    net.add(Fixture.bob, policy: .all)
    net.discoverAll()
    net.act(a) { m, x, now in m.invite(Fixture.bobID, context: [], now: now, into: &x) }
    net.run()
    _ = net.take(a)
    _ = net.take(Fixture.bobID)
    for _ in 0..<50 { net.act(a) { m, x, _ in m.requestVerification(Fixture.bobID, into: &x) } }
    net.run()
    let asked = SessionEvent.verification(Fixture.alice, code: "123456", askedByPeer: true)
    #expect(net.take(Fixture.bobID).filter { $0 == asked }.count == 1)
    net.advance(by: .seconds(5))
    net.act(a) { m, x, _ in m.requestVerification(Fixture.bobID, into: &x) }
    net.run()
    #expect(!net.take(Fixture.bobID).contains(asked), "within the interval")
    net.advance(by: SessionStateMachine.verificationRequestInterval)
    net.act(a) { m, x, _ in m.requestVerification(Fixture.bobID, into: &x) }
    net.act(a) { m, x, _ in m.requestVerification(Fixture.bobID, into: &x) }
    net.run()
    #expect(net.take(Fixture.bobID).filter { $0 == asked }.count == 1, "once more after the interval")
  }
}

@Suite("Relays route sealed messages along the roster")
struct RelayRoutingTests {
  /// alice — r1 — r2 — carol, with bob also on r1: a message to everyone from alice
  /// reaches bob and carol once each, and nobody reports bob unknown (r2 reaches him only
  /// back through r1, the way the message came).
  @Test func aRecipientBehindThePreviousRelayIsNotReportedUnknown() {
    var net = RelayStateMachineTests().network(twoRelays: true)
    net.add(Fixture.bob, policy: .all)
    net.discoverAll()
    net.act(Fixture.bobID) { m, x, now in m.invite(RelayStateMachineTests.r1.id, context: [], now: now, into: &x) }
    net.run()
    for node in net.nodes.keys { _ = net.take(node) }
    var id: MessageID = 0
    net.act(Fixture.aliceID) { m, x, now in id = m.send([4, 2], to: .all, timestamp: 0, now: now, into: &x) }
    net.run()
    #expect(net.take(Fixture.bobID).filter { $0.kind == "message" }.count == 1)
    #expect(net.take(Fixture.carolID).filter { $0.kind == "message" }.count == 1)
    let alice = net.take(Fixture.aliceID)
    #expect(!alice.contains { $0.kind == "error" }, "\(alice)")
    #expect(Set(alice.compactMap { if case .delivered(id, let p) = $0 { p.id } else { nil } }) == [Fixture.bobID, Fixture.carolID])
    #expect(net.nodes[RelayStateMachineTests.r2.id]!.relayStatistics.unknownRecipients == 0)
  }

  /// A message to the relay itself and to a peer behind it: the relay takes its direct copy,
  /// and still forwards the sealed one (same id) to the other.
  @Test func aMessageToARelayAndThroughItReachesBoth() {
    var net = RelayStateMachineTests().network()
    for node in net.nodes.keys { _ = net.take(node) }
    net.act(Fixture.aliceID) { m, x, now in
      _ = m.send([7], to: .peers([RelayStateMachineTests.r1.id, Fixture.carolID]), timestamp: 0, now: now, into: &x)
    }
    net.run()
    #expect(net.take(RelayStateMachineTests.r1.id).filter { $0.kind == "message" }.count == 1)
    #expect(net.take(Fixture.carolID).filter { $0.kind == "message" }.count == 1)
  }
}
