// One file: one suite on one setup, alice — r1 — carol on the simulated network with links
// cut and healed; its cases share the network it builds and its send, run, relay-away and
// resume helpers.

import NearbyCore
import Testing

/// Messages on their way through a relay when the session with it is lost for a moment
/// (PROTOCOL.md 6.5, SessionStateMachine+RelayResend.swift): alice — r1 — carol on the
/// simulated network, alice's link to the relay cut and healed.
@Suite("Relay sessions that resume (simulated network, virtual clock)")
struct RelayResumeTests {
  let a = Fixture.aliceID
  let c = Fixture.carolID
  let r = RelayStateMachineTests.r1.id

  func network(configure: (inout SessionStateMachine.Configuration) -> Void = { _ in }) -> SimulatedNetwork {
    var net = SimulatedNetwork()
    net.add(RelayStateMachineTests.r1, policy: .all) {
      $0.capabilities = .relay
      configure(&$0)
    }
    net.add(Fixture.alice, policy: .all, configure: configure)
    net.add(Fixture.carol, policy: .all, configure: configure)
    net.discoverAll()
    net.act(a) { m, x, now in m.invite(RelayStateMachineTests.r1.id, context: [], now: now, into: &x) }
    net.act(c) { m, x, now in m.invite(RelayStateMachineTests.r1.id, context: [], now: now, into: &x) }
    net.run()
    for id in net.nodes.keys { _ = net.take(id) }
    return net
  }

  func send(_ net: inout SimulatedNetwork, _ text: String) -> MessageID? {
    net.act(a) { m, x, now in try? m.sendMessage(Array(text.utf8), to: .peers([c]), timestamp: 0, now: now, into: &x).id }
  }

  /// Runs the network for `duration`, or until what alice was told satisfies `done`: what
  /// alice was told, and the texts carol was handed.
  func run(
    _ net: inout SimulatedNetwork, for duration: Duration, until done: ([SessionEvent]) -> Bool = { _ in false }
  ) -> (alice: [SessionEvent], carol: [String]) {
    var events: [SessionEvent] = []
    var texts: [String] = []
    let end = net.now + duration
    while net.now < end, !done(events) {
      net.advance(by: .milliseconds(100))
      events += net.take(a)
      texts += net.receivedTexts(c)
    }
    return (events, texts)
  }

  @Test func aBlipOnTheWayToTheRelayLosesNothingAndFailsNothing() throws {
    var net = network()
    net.partition(a, r)
    let cut = net.now
    var ids = try (1...5).map { try #require(send(&net, "m\($0)")) }
    var aliceEvents: [SessionEvent] = []
    while net.now < cut + .seconds(8) {
      net.advance(by: .milliseconds(100))
      aliceEvents += net.take(a)
      // Before the loss is noticed: the message goes to the old connection, and is lost with it.
      if net.now == cut + .seconds(2) { ids.append(try #require(send(&net, "m6"))) }
    }
    #expect(aliceEvents.contains(.reconnecting(RelayStateMachineTests.r1, attempt: 1)))
    #expect(ReconnectTests.failures(aliceEvents).isEmpty, "nothing fails while the session waits: \(aliceEvents)")
    #expect(net.receivedTexts(c).isEmpty)
    net.heal(a, r)
    let (later, texts) = run(&net, for: .seconds(10))
    aliceEvents += later
    #expect(aliceEvents.contains(.reconnected(RelayStateMachineTests.r1)))
    #expect(texts == ["m1", "m2", "m3", "m4", "m5", "m6"], "each once, in order")
    #expect(ReconnectTests.delivered(aliceEvents) == ids)
    #expect(ReconnectTests.failures(aliceEvents).isEmpty)
    #expect(net.nodes[a]!.relayCopiesKept == 0, "the kept copies are gone once delivered")
    // Each went once after the resume: the roster that made carol reachable again did not
    // send them a second time.
    #expect(messagesSent(net, by: a).count == 6 + 6, "\(messagesSent(net, by: a))")
  }

  /// The MESSAGE frames `node` wrote, on all its connections, by id.
  func messagesSent(_ net: SimulatedNetwork, by node: PeerID) -> [UInt64] {
    net.framesSent.filter { $0.key.node == node }.values.joined().compactMap { if case .message(let m) = $0 { m.id } else { nil } }.sorted()
  }

  @Test func aBlipBetweenTheRelayAndTheRecipientLosesNothingEither() throws {
    var net = network()
    net.partition(c, r)
    let ids = try ["n1", "n2", "n3"].map { try #require(send(&net, $0)) }
    let (during, lost) = run(&net, for: .seconds(8))
    #expect(during.contains(.unreachable(Fixture.carol)), "\(during)")
    #expect(lost.isEmpty)
    #expect(send(&net, "refused") == nil, "while carol is unreachable, a message to her is refused")
    #expect(net.nodes[a]!.relayCopiesKept == 3)
    net.heal(c, r)
    let (after, texts) = run(&net, for: .seconds(15))
    #expect(after.contains(.reachable(Fixture.carol, via: RelayStateMachineTests.r1)), "\(after)")
    #expect(texts == ["n1", "n2", "n3"], "sent again once carol was reachable again, each once")
    #expect(ReconnectTests.delivered(during + after) == ids)
    #expect(ReconnectTests.failures(during + after).isEmpty)
    #expect(net.nodes[a]!.relayCopiesKept == 0)
  }

  @Test func aReceiptLostWithTheConnectionComesAgainAfterTheResume() throws {
    var net = network()
    // What the relay sends alice vanishes: carol gets the messages, alice never hears back.
    net.silence(from: r, to: a)
    let ids = try ["x", "y"].map { try #require(send(&net, $0)) }
    net.advance(by: .seconds(1))
    #expect(net.receivedTexts(c) == ["x", "y"])
    let (aliceEvents, texts) = run(&net, for: .seconds(15))
    #expect(aliceEvents.contains(.reconnected(RelayStateMachineTests.r1)), "\(aliceEvents)")
    #expect(ReconnectTests.delivered(aliceEvents) == ids, "the relay passed the copies on, carol acknowledged them again")
    #expect(texts.isEmpty, "carol's application got each message once: \(texts)")
    #expect(ReconnectTests.failures(aliceEvents).isEmpty)
  }

  @Test func aRelayThatStaysAwayFailsWhatWaitedWhenTheGraceEnds() throws {
    var net = network { $0.reconnectGrace = .seconds(12) }
    net.partition(a, r)
    let ids = try ["lost1", "lost2"].map { try #require(send(&net, $0)) }
    net.advance(by: .seconds(10))
    #expect(ReconnectTests.failures(net.take(a)).isEmpty, "nothing fails during the grace")
    net.advance(by: .seconds(8))
    let events = net.take(a)
    #expect(events.contains { $0.kind == "disconnected" }, "\(events)")
    #expect(Set(ReconnectTests.failures(events)) == Set(ids))
    #expect(net.nodes[a]!.relayCopiesKept == 0)
  }

  @Test func copiesWaitingForAnswersHoldTheSenderBack() throws {
    var net = network { $0.resendWindowBytes = 1000 }
    net.slowApplications.insert(c)
    let routing = try net.nodes[a]!.routing(.peers([c]))
    #expect(net.nodes[a]!.fullWindows(routing).isEmpty)
    for _ in 0..<3 {
      _ = net.act(a) { m, x, now in try? m.sendMessage([UInt8](repeating: 1, count: 400), to: .peers([c]), timestamp: 0, now: now, into: &x) }
    }
    net.run()
    #expect(net.nodes[a]!.fullWindows(routing) == [r], "carol has not answered: the copies fill the window")
    #expect(!net.nodes[a]!.windowHasRoom(r))
    net.take(messagesAt: c)
    net.slowApplications.remove(c)
    net.advance(by: .seconds(1))
    #expect(net.nodes[a]!.windowHasRoom(r))
    #expect(ReconnectTests.delivered(net.take(a)).count == 3)
  }

  @Test func aRecipientThatStaysUnreachablePastTheGraceFailsWhatWaitedForIt() throws {
    var net = network { $0.reconnectGrace = .seconds(12) }
    net.partition(c, r)
    let ids = try ["z1", "z2"].map { try #require(send(&net, $0)) }
    let (early, _) = run(&net, for: .seconds(12))
    #expect(early.contains(.unreachable(Fixture.carol)), "\(early)")
    #expect(ReconnectTests.failures(early).isEmpty, "carol's grace is not over yet: \(early)")
    let (late, _) = run(&net, for: .seconds(10))
    #expect(Set(ReconnectTests.failures(late)) == Set(ids), "\(late)")
    let reasons = late.compactMap { if case .error(.undelivered(_, _, _, let reason)) = $0 { "\(reason)" } else { nil } }
    #expect(reasons.allSatisfy { $0.contains("carol was not reachable through any relay again within 12.00 s") }, "\(reasons)")
    #expect(net.nodes[a]!.relayCopiesKept == 0)
    #expect(!net.nodes[a]!.hasPendingDeliveries)
  }

  // MARK: Messages sent while the relay is away

  /// Alice's link to the relay is cut and she has noticed: the relay's session waits to resume.
  func relayAway(_ net: inout SimulatedNetwork) -> [SessionEvent] {
    net.partition(a, r)
    var events: [SessionEvent] = []
    for _ in 0..<80 {
      net.advance(by: .milliseconds(100))
      events += net.take(a)
      if events.contains(.reconnecting(RelayStateMachineTests.r1, attempt: 1)) { break }
    }
    return events
  }

  @Test func aMessageToAPeerBehindARelayThatIsAwayWaitsForTheRelay() throws {
    var net = network()
    var aliceEvents = relayAway(&net)
    #expect(aliceEvents.contains(.reconnecting(RelayStateMachineTests.r1, attempt: 1)), "\(aliceEvents)")
    #expect(net.nodes[a]!.relayedPeers.map(\.peer.id) == [c], "carol is still addressable, through the relay")
    #expect(net.nodes[a]!.expectedRecipients(.all).map(\.id) == [c])
    // Neither refused nor sent: held for the relay.
    let first = try #require(send(&net, "while away 1"))
    let everyone = try #require(
      net.act(a) { m, x, now in try? m.sendMessage(Array("while away 2".utf8), to: .all, timestamp: 0, now: now, into: &x).id })
    #expect(net.nodes[a]!.relayCopiesKept == 2)
    let (during, lost) = run(&net, for: .seconds(2))
    aliceEvents += during
    #expect(lost.isEmpty)
    #expect(ReconnectTests.failures(aliceEvents).isEmpty, "\(aliceEvents)")
    net.heal(a, r)
    let (after, texts) = run(&net, for: .seconds(10))
    #expect(after.contains(.reconnected(RelayStateMachineTests.r1)), "\(after)")
    #expect(texts == ["while away 1", "while away 2"], "each once, in order")
    #expect(ReconnectTests.delivered(after) == [first, everyone])
    #expect(ReconnectTests.failures(after).isEmpty)
    #expect(net.nodes[a]!.relayCopiesKept == 0)
    #expect(messagesSent(net, by: a).filter { [first, everyone].map(\.rawValue).contains($0) }.count == 2, "each went once, at the resume")
    // Carol is back where the relay's roster puts her: a message to her goes at once.
    let later = try #require(send(&net, "after"))
    let (last, more) = run(&net, for: .seconds(1))
    #expect(more == ["after"])
    #expect(ReconnectTests.delivered(last) == [later])
  }

  @Test func aMessageHeldForARelayThatStaysAwayFailsWhenTheGraceEnds() throws {
    var net = network { $0.reconnectGrace = .seconds(12) }
    _ = relayAway(&net)
    let held = try #require(send(&net, "held"))
    let (early, _) = run(&net, for: .seconds(4))
    #expect(ReconnectTests.failures(early).isEmpty, "the relay's grace is not over yet: \(early)")
    let (late, texts) = run(&net, for: .seconds(12))
    #expect(texts.isEmpty)
    #expect(ReconnectTests.failures(late) == [held], "\(late)")
    #expect(net.nodes[a]!.relayCopiesKept == 0)
    #expect(!net.nodes[a]!.hasPendingDeliveries)
    #expect(send(&net, "refused") == nil, "the relay is gone: carol cannot be reached")
    #expect(net.nodes[a]!.relayedPeers.isEmpty)
  }

  @Test func aMessageHeldForAPeerThatLeftMeanwhileFailsWithAReason() throws {
    var net = network()
    _ = relayAway(&net)
    let held = try #require(send(&net, "for carol"))
    // Carol leaves the relay for good while alice cannot hear of it.
    net.act(c) { m, x, now in m.leave(r, now: now, into: &x) }
    let (_, _) = run(&net, for: .seconds(2))
    net.heal(a, r)
    let (after, texts) = run(&net, for: .seconds(40))
    #expect(texts.isEmpty)
    #expect(ReconnectTests.failures(after) == [held], "reported, not lost: \(after)")
    let reasons = after.compactMap { if case .error(.undelivered(_, _, _, let reason)) = $0 { reason } else { nil } }
    #expect(reasons == [.remote(.unknownRecipient)], "the relay said it does not know carol now")
    #expect(
      reasons.first?.description
        == "no relay on the way knows the recipient now (it left, or the relay behind it is away); send again once it is reachable (unknownRecipient)"
    )
    #expect(!net.nodes[a]!.hasPendingDeliveries)
    #expect(net.nodes[a]!.relayCopiesKept == 0)
    #expect(send(&net, "refused") == nil, "the relay no longer names carol")
  }

  @Test func messagesHeldForARelayThatIsAwayCountAgainstItsWindow() throws {
    var net = network { $0.resendWindowBytes = 1000 }
    _ = relayAway(&net)
    let routing = try net.nodes[a]!.routing(.peers([c]))
    #expect(routing.targets.isEmpty, "nothing is sent while the relay is away")
    for _ in 0..<3 {
      _ = net.act(a) { m, x, now in try? m.sendMessage([UInt8](repeating: 1, count: 400), to: .peers([c]), timestamp: 0, now: now, into: &x) }
    }
    #expect(net.nodes[a]!.fullWindows(routing) == [r], "held copies fill the relay's window: the sender waits")
    #expect(!net.nodes[a]!.windowHasRoom(r))
    net.heal(a, r)
    let (after, texts) = run(&net, for: .seconds(10))
    #expect(texts.count == 3)
    #expect(ReconnectTests.delivered(after).count == 3)
    #expect(net.nodes[a]!.windowHasRoom(r))
  }

  /// A blip on alice's side (messages in flight: the resume sends them again), then one on
  /// carol's: what waits for carol when she is back goes again (the first resume's note of
  /// what it resent must not skip it).
  @Test func aBlipOnEachSideInTurnLosesNothing() throws {
    var net = network()
    net.partition(a, r)
    let first = try #require(send(&net, "first"))
    _ = run(&net, for: .seconds(8))
    net.heal(a, r)
    let (resumed, texts) = run(&net, for: .seconds(10))
    #expect(texts == ["first"])
    #expect(ReconnectTests.delivered(resumed) == [first], "\(resumed)")
    net.partition(c, r)
    let second = try #require(send(&net, "second"))
    let (during, _) = run(&net, for: .seconds(8))
    #expect(during.contains(.unreachable(Fixture.carol)), "\(during)")
    net.heal(c, r)
    let (after, later) = run(&net, for: .seconds(15))
    #expect(later == ["second"], "sent again once carol was back")
    #expect(ReconnectTests.delivered(during + after) == [second])
    #expect(ReconnectTests.failures(during + after).isEmpty)
  }

  /// The relay's session resumes, its roster does not come, and the session ends: carol, who
  /// was behind it, is reported unreachable then (and is no longer offered as reachable).
  @Test func aRelayWhoseSessionEndsBeforeItsRosterCameLeavesItsPeersUnreachable() throws {
    var net = network()
    _ = relayAway(&net)
    let held = try #require(send(&net, "held"))
    net.rostersDropped.insert(a)
    net.heal(a, r)
    let (resumed, texts) = run(&net, for: .seconds(5))
    #expect(resumed.contains(.reconnected(RelayStateMachineTests.r1)), "\(resumed)")
    #expect(texts == ["held"])
    #expect(ReconnectTests.delivered(resumed) == [held])
    #expect(net.nodes[a]!.relayedPeers.map(\.peer.id) == [c], "still behind the relay: its roster has not come")
    #expect(!resumed.contains(.unreachable(Fixture.carol)))
    net.act(a) { m, x, now in m.leave(r, now: now, into: &x) }
    net.run()
    let events = net.take(a)
    #expect(events.contains(.unreachable(Fixture.carol)), "\(events)")
    #expect(net.nodes[a]!.relayedPeers.isEmpty)
    #expect(send(&net, "refused") == nil)
  }

  /// Carol waits behind r1, which is away; she joins r2, which alice also has a session with:
  /// what waited for her goes through r2 at once (r1 never comes back).
  @Test func aPeerWaitingBehindARelayThatIsAwayIsReachedThroughAnotherRelay() throws {
    var net = network { $0.reconnectGrace = .seconds(20) }
    let r2 = RelayStateMachineTests.r2
    net.add(r2, policy: .all) { $0.capabilities = .relay }
    net.discoverAll()
    net.act(a) { m, x, now in m.invite(r2.id, context: [], now: now, into: &x) }
    net.run()
    _ = net.take(a)
    _ = relayAway(&net)
    let held = try #require(send(&net, "held"))
    net.act(c) { m, x, now in m.invite(r2.id, context: [], now: now, into: &x) }
    let (events, texts) = run(&net, for: .seconds(3))
    #expect(events.contains(.reachable(Fixture.carol, via: r2)), "\(events)")
    #expect(texts == ["held"], "sent through r2 as soon as r2 named carol")
    #expect(ReconnectTests.delivered(events) == [held])
    let later = try #require(send(&net, "later"))
    let (more, after) = run(&net, for: .seconds(30))
    #expect(after == ["later"])
    #expect(ReconnectTests.delivered(more) == [later])
    #expect(ReconnectTests.failures(events + more).isEmpty, "r1's grace ended: nothing waited for it any more")
    #expect(net.nodes[a]!.relayCopiesKept == 0)
  }

  /// The relay comes back and its roster names carol at once: she is not reported unreachable
  /// or reachable again, and what waited went once, at the resume.
  @Test func theResumedRelaysRosterKeepsCarolWithoutANewReport() throws {
    var net = network()
    _ = relayAway(&net)
    let held = try #require(send(&net, "held"))
    net.heal(a, r)
    let (events, texts) = run(&net, for: .seconds(10))
    #expect(texts == ["held"])
    #expect(ReconnectTests.delivered(events) == [held])
    #expect(!events.contains { $0.kind == "reachable" || $0.kind == "unreachable" }, "\(events)")
    #expect(messagesSent(net, by: a).filter { $0 == held.rawValue }.count == 1)
  }

  /// The relay dialled alice and resumes on a new connection before alice noticed the old one
  /// was lost (the session moves): carol is neither reported unreachable nor forgotten, and a
  /// message to her is not refused meanwhile.
  @Test func aRelaySessionThatMovesKeepsItsPeersAddressable() throws {
    var net = SimulatedNetwork()
    net.add(RelayStateMachineTests.r1, policy: .all) { $0.capabilities = .relay }
    net.add(Fixture.alice, policy: .all)
    net.add(Fixture.carol, policy: .all)
    net.discoverAll()
    net.act(r) { m, x, now in m.invite(a, context: [], now: now, into: &x) }
    net.act(c) { m, x, now in m.invite(r, context: [], now: now, into: &x) }
    net.run()
    for id in net.nodes.keys { _ = net.take(id) }
    net.silence(from: a, to: r)
    net.advance(by: .seconds(1))
    net.silence(from: r, to: a)
    var events: [SessionEvent] = []
    var ids: [MessageID] = []
    for step in 0..<150 {
      net.advance(by: .milliseconds(100))
      events += net.take(a)
      if step % 10 == 0 { ids.append(try #require(send(&net, "m\(step)"), "refused at \(step): \(events)")) }
    }
    #expect(net.moved[a]?.isEmpty == false, "the session moved to the relay's new connection")
    #expect(!events.contains { $0.kind == "unreachable" }, "\(events)")
    #expect(ReconnectTests.failures(events).isEmpty, "\(events)")
    #expect(Set(ReconnectTests.delivered(events)) == Set(ids))
  }

  /// Heals alice's link to the relay and runs until the session has resumed (the relay's
  /// roster comes in the same step): what alice was told, and the texts carol was handed.
  func resume(_ net: inout SimulatedNetwork) -> (alice: [SessionEvent], carol: [String]) {
    net.heal(a, r)
    return run(&net, for: .seconds(30)) { $0.contains(.reconnected(RelayStateMachineTests.r1)) }
  }

  /// The relay's full roster after the resume comes in two frames, as a relay with more than
  /// 4096 peers sends it, and only the second names carol: within the settle delay she is
  /// neither reported unreachable nor forgotten, and a message to her goes through the relay.
  @Test func aFullRosterOfSeveralFramesKeepsCarolUntilItsLastFrame() throws {
    var net = network()
    _ = relayAway(&net)
    let held = try #require(send(&net, "held"))
    net.rosterEntriesLate[a] = [c]
    var (events, texts) = resume(&net)
    #expect(events.contains(.reconnected(RelayStateMachineTests.r1)), "\(events)")
    #expect(net.rosterRest[a]?.map(\.entry.peer.id) == [c], "the first frame came without carol")
    let (meanwhile, moreTexts) = run(&net, for: .milliseconds(600))
    events += meanwhile
    texts += moreTexts
    #expect(texts == ["held"])
    #expect(net.nodes[a]!.relayedPeers.map(\.peer.id) == [c], "still behind the relay")
    let between = try #require(send(&net, "between frames"), "a message to carol is not refused")
    net.rosterEntriesLate[a] = nil
    net.deliverRosterRest(to: a)
    let (after, lastTexts) = run(&net, for: .seconds(3))
    events += after
    #expect(lastTexts == ["between frames"])
    #expect(ReconnectTests.delivered(events) == [held, between])
    #expect(ReconnectTests.failures(events).isEmpty, "\(events)")
    #expect(!events.contains { $0.kind == "reachable" || $0.kind == "unreachable" }, "\(events)")
    #expect(net.nodes[a]!.relayedPeers.map(\.peer.id) == [c])
  }

  /// The same, with the second frame later than the settle delay: carol is reported
  /// unreachable when the delay ends (a message to her is refused then), and reachable again
  /// through the relay when the frame comes.
  @Test func aRosterFrameLaterThanTheSettleDelayReportsCarolAwayAndBack() throws {
    var net = network()
    _ = relayAway(&net)
    net.rosterEntriesLate[a] = [c]
    var (events, _) = resume(&net)
    let (settled, _) = run(&net, for: SessionStateMachine.rosterSettleDelay + .milliseconds(500))
    events += settled
    #expect(events.filter { $0.kind == "unreachable" } == [.unreachable(Fixture.carol)], "\(events)")
    #expect(send(&net, "refused") == nil)
    net.rosterEntriesLate[a] = nil
    net.deliverRosterRest(to: a)
    let (back, _) = run(&net, for: .milliseconds(200))
    #expect(back.filter { $0.kind == "reachable" } == [.reachable(Fixture.carol, via: RelayStateMachineTests.r1)], "\(back)")
    let later = try #require(send(&net, "later"))
    let (delivered, texts) = run(&net, for: .seconds(2))
    #expect(texts == ["later"])
    #expect(ReconnectTests.delivered(delivered) == [later])
  }
}
