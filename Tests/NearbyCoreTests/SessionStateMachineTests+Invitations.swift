import NearbyCore
import Testing

/// Invitations: answers, timeouts, crossing invitations, queues and accept policies.
extension SessionStateMachineTests {
  @Test func declineReachesTheInviterWithItsReason() throws {
    var net = pair()
    net.act(a) { m, x, now in m.invite(Fixture.bobID, context: [], now: now, into: &x) }
    net.run()
    _ = try #require(firstInvitation(in: net.take(b)))
    net.act(b) { m, x, now in m.decline(peer: Fixture.aliceID, now: now, into: &x) }
    net.run()
    #expect(net.take(a).contains(.declined(Fixture.bob, .declined)))
    #expect(net.take(b).isEmpty)
    #expect(net.nodes[b]!.pendingInvitations.isEmpty)
    #expect(net.openLinks(a) == 0)
    #expect(net.openLinks(b) == 0)
    // Answering again is refused, not a crash or a second answer.
    net.act(b) { m, x, now in m.accept(peer: Fixture.aliceID, now: now, into: &x) }
    #expect(net.take(b).map(\.kind) == ["error"])
  }

  @Test func unansweredInvitationTimesOutOnBothSides() {
    var net = pair()
    net.act(a) { m, x, now in m.invite(Fixture.bobID, context: [], timeout: .seconds(2), now: now, into: &x) }
    net.run()
    _ = net.take(a)
    #expect(net.take(b).map(\.kind) == ["invitation"])
    net.advance(by: .milliseconds(1900))
    #expect(net.take(a).isEmpty)
    net.advance(by: .milliseconds(300))
    #expect(net.take(a) == [.declined(Fixture.bob, .timeout)])
    #expect(net.take(b).map(\.kind) == ["invitationWithdrawn"])
    #expect(net.nodes[b]!.pendingInvitations.isEmpty)
  }

  @Test("crossing invitations end with one connection", arguments: [false, true])
  func crossingInvitations(lowerInvitesFirst: Bool) {
    var net = pair()
    let first = lowerInvitesFirst ? a : b
    let second = lowerInvitesFirst ? b : a
    net.act(first) { m, x, now in m.invite(second, context: [], now: now, into: &x) }
    net.act(second) { m, x, now in m.invite(first, context: [], now: now, into: &x) }
    net.run()
    let eventsA = net.take(a).map(\.kind)
    let eventsB = net.take(b).map(\.kind)
    #expect(eventsA.filter { $0 == "connected" }.count == 1, "\(eventsA)")
    #expect(eventsB.filter { $0 == "connected" }.count == 1, "\(eventsB)")
    #expect(!eventsA.contains("invitation") && !eventsB.contains("invitation"))
    #expect(!eventsA.contains("disconnected") && !eventsB.contains("disconnected"))
    #expect(net.openLinks(a) == 1)
    #expect(net.openLinks(b) == 1)
    // The surviving connection is the one alice (the lower id) opened.
    let connection = net.nodes[a]!.sessionConnection(b)!
    #expect(net.nodes[a]!.connectionState(connection) == .connected)
    // Version 2 sends no HELLO frame (it is in the handshake): alice's first frame is her INVITE.
    #expect(
      net.framesSent[SimulatedNetwork.Link(node: a, connection: connection)]?.first.map { if case .invite = $0 { true } else { false } } == true)
    #expect(!net.framesSent.values.joined().contains { if case .hello = $0 { true } else { false } })
    // And messages flow on it.
    net.act(b) { m, x, now in m.send([1], to: .all, timestamp: 0, now: now, into: &x) }
    net.run()
    #expect(net.take(a).map(\.kind) == ["message"])
    #expect(net.take(b).map(\.kind) == ["delivered"])
  }

  enum CrossingMode: String, CaseIterable, Sendable {
    case askByAddress, askByID, allByAddress, allByID
    var policy: AcceptPolicy { self == .askByAddress || self == .askByID ? .ask : .all }
    var byAddress: Bool { self == .askByAddress || self == .allByAddress }
  }

  /// Two peers invite each other at once; every interleaving of what the two connections
  /// carry must end with one session and nothing left waiting for a person's answer. Dialled
  /// by address, a peer learns whom it called only from the HELLO, which may come after the
  /// other's INVITE on the connection that one opened.
  @Test("crossing invitations end with one connection in any interleaving", arguments: CrossingMode.allCases, 0..<100)
  func crossingInvitationsInAnyOrder(mode: CrossingMode, seed: UInt64) {
    var net = SimulatedNetwork()
    net.add(Fixture.alice, policy: mode.policy)
    net.add(Fixture.bob, policy: mode.policy)
    if mode.byAddress {
      net.act(a) { m, x, _ in m.invite(endpoints: [Endpoint(host: b.hex, port: 1)], context: [], timeout: nil, into: &x) }
      net.act(b) { m, x, _ in m.invite(endpoints: [Endpoint(host: a.hex, port: 1)], context: [], timeout: nil, into: &x) }
    } else {
      net.discoverAll()
      net.act(a) { m, x, now in m.invite(b, context: [], now: now, into: &x) }
      net.act(b) { m, x, now in m.invite(a, context: [], now: now, into: &x) }
    }
    net.runShuffled(seed: seed)
    let eventsA = net.take(a).map(\.kind)
    let eventsB = net.take(b).map(\.kind)
    #expect(net.connectedNames(a) == ["bob"], "\(eventsA)")
    #expect(net.connectedNames(b) == ["alice"], "\(eventsB)")
    #expect(eventsA.filter { $0 == "connected" }.count == 1, "\(eventsA)")
    #expect(eventsB.filter { $0 == "connected" }.count == 1, "\(eventsB)")
    #expect(!eventsA.contains("disconnected") && !eventsB.contains("disconnected"))
    #expect(net.nodes[a]!.pendingInvitations.isEmpty && net.nodes[b]!.pendingInvitations.isEmpty)
    #expect(net.openLinks(a) == 1 && net.openLinks(b) == 1)
  }

  @Test func crossingWhenTheWinnersAttemptFailsAcceptsTheHeldInvitation() {
    var net = pair()
    net.act(a) { m, x, now in m.invite(Fixture.bobID, context: [], now: now, into: &x) }
    // Everything alice sends on her own connection is lost: bob never gets her HELLO.
    net.silenced.insert(SimulatedNetwork.Link(node: a, connection: ConnectionID(1 << 63 | 1)))
    net.act(b) { m, x, now in m.invite(Fixture.aliceID, context: [], now: now, into: &x) }
    net.run()
    // Alice holds bob's invitation (her connection would win), so nobody is connected yet.
    #expect(net.connectedNames(a).isEmpty)
    #expect(!net.take(a).contains { $0.kind == "invitation" })
    net.advance(by: .seconds(6))
    #expect(net.connectedNames(a) == ["bob"])
    #expect(net.connectedNames(b) == ["alice"])
    #expect(net.take(b).filter { $0.kind == "connected" }.count == 1)
  }

  @Test func invitingAConnectedPeerOpensNoSecondConnection() {
    var net = pair(policy: .all)
    net.act(a) { m, x, now in m.invite(Fixture.bobID, context: [], now: now, into: &x) }
    net.run()
    _ = net.take(a)
    net.act(a) { m, x, now in m.invite(Fixture.bobID, context: [], now: now, into: &x) }
    #expect(net.queue.isEmpty)
    guard case .error(.rejected(let text))? = net.take(a).first else {
      Issue.record("no error")
      return
    }
    #expect(text.contains("already connected"))
    #expect(net.openLinks(a) == 1)
  }

  @Test func invitingAPeerWhoseInvitationIsPendingAcceptsIt() {
    var net = pair()
    net.act(a) { m, x, now in m.invite(Fixture.bobID, context: [], now: now, into: &x) }
    net.run()
    #expect(net.take(b).map(\.kind) == ["invitation"])
    net.act(b) { m, x, now in m.invite(Fixture.aliceID, context: [], now: now, into: &x) }
    net.run()
    #expect(net.take(b).map(\.kind) == ["connected"])
    #expect(net.openLinks(b) == 1)
  }

  @Test func severalPendingInvitationsAreQueuedAndEachAnsweredOnce() {
    var net = SimulatedNetwork()
    net.add(Fixture.alice)
    for index in 1...3 { net.add(Fixture.peer(index)) }
    net.discoverAll()
    for index in 1...3 {
      net.act(Fixture.peer(index).id) { m, x, now in m.invite(Fixture.aliceID, context: [UInt8(index)], now: now, into: &x) }
    }
    net.run()
    let invitations = net.take(a).compactMap { if case .invitation(let i) = $0 { i } else { nil } }
    #expect(invitations.map(\.peer.name.value) == ["peer1", "peer2", "peer3"])
    #expect(net.nodes[a]!.pendingInvitations.count == 3)
    net.act(a) { m, x, now in m.accept(peer: Fixture.peer(2).id, now: now, into: &x) }
    net.act(a) { m, x, now in m.decline(peer: Fixture.peer(1).id, now: now, into: &x) }
    net.run()
    #expect(net.nodes[a]!.pendingInvitations.map(\.peer.name.value) == ["peer3"])
    #expect(net.take(Fixture.peer(1).id).contains(.declined(Fixture.alice, .declined)))
    #expect(net.take(Fixture.peer(2).id).contains(.connected(Fixture.alice, PeerSecurity(verificationCode: "123456", isVerified: false))))
  }

  @Test func tooManyPendingInvitationsAreDeclinedBusy() {
    var net = SimulatedNetwork()
    net.add(Fixture.alice) { $0.maximumPendingInvitations = 2 }
    for index in 1...3 { net.add(Fixture.peer(index)) }
    net.discoverAll()
    for index in 1...3 {
      net.act(Fixture.peer(index).id) { m, x, now in m.invite(Fixture.aliceID, context: [], now: now, into: &x) }
    }
    net.run()
    #expect(net.nodes[a]!.pendingInvitations.count == 2)
    #expect(net.take(Fixture.peer(3).id).contains(.declined(Fixture.alice, .busy)))
  }

  /// Two hosts holding every slot (16 invitations each, which may wait 10 minutes) kept
  /// everybody else from inviting. Now the oldest of the host with the most gives way to a
  /// host with fewer (withdrawn, declined `busy`), and those two hosts cannot push each other
  /// out in turns.
  @Test func aHostWithFewerInvitationsWaitingTakesASlotFromTheOneWithTheMost() {
    var net = SimulatedNetwork()
    net.add(Fixture.alice) { $0.maximumPendingInvitations = 6 }
    let mallory = (1...4).map { Fixture.peer($0) }
    let eve = (5...7).map { Fixture.peer($0) }
    let bob = Fixture.peer(8)
    for peer in mallory + eve + [bob] { net.add(peer) }
    for peer in mallory { net.hosts[peer.id] = "192.0.2.66" }
    for peer in eve { net.hosts[peer.id] = "192.0.2.99" }
    net.discoverAll()
    func invite(_ peer: Peer) {
      net.act(peer.id) { m, x, now in m.invite(Fixture.aliceID, context: [], now: now, into: &x) }
      net.run()
    }
    for peer in mallory.prefix(3) + eve.prefix(3) { invite(peer) }
    #expect(net.nodes[a]!.pendingInvitations.count == 6)
    // A fourth from mallory's host: it has 3, as many as eve's: no room for it.
    invite(mallory[3])
    #expect(net.take(mallory[3].id).contains(.declined(Fixture.alice, .busy)))
    #expect(net.nodes[a]!.pendingInvitations.count == 6)
    // Bob's host has none: the oldest of the fullest host (mallory's first) gives way.
    _ = net.take(Fixture.aliceID)
    invite(bob)
    let waiting = net.nodes[a]!.pendingInvitations.map(\.peer.id)
    #expect(waiting.count == 6)
    #expect(waiting.contains(bob.id))
    #expect(!waiting.contains(mallory[0].id))
    #expect(net.take(mallory[0].id).contains(.declined(Fixture.alice, .busy)))
    let events = net.take(Fixture.aliceID)
    #expect(events.contains { if case .invitationWithdrawn(let p, _) = $0 { p.id == mallory[0].id } else { false } })
    #expect(events.contains { if case .invitation(let i) = $0 { i.peer.id == bob.id } else { false } })
    // Mallory's host (2 left) and eve's (3) now differ by one: neither takes the other's slot.
    invite(mallory[0])
    #expect(net.take(mallory[0].id).contains(.declined(Fixture.alice, .busy)))
    #expect(net.nodes[a]!.pendingInvitations.map(\.peer.id) == waiting)
  }

  @Test func acceptPolicies() {
    var net = SimulatedNetwork()
    net.add(Fixture.alice, policy: .none) { $0.allowList = [Fixture.carolID] }
    net.add(Fixture.bob)
    net.add(Fixture.carol)
    net.discoverAll()
    net.act(b) { m, x, now in m.invite(Fixture.aliceID, context: [], now: now, into: &x) }
    net.act(c) { m, x, now in m.invite(Fixture.aliceID, context: [], now: now, into: &x) }
    net.run()
    #expect(net.take(b).contains(.declined(Fixture.alice, .notAllowed)))
    #expect(net.take(c).contains(.connected(Fixture.alice, PeerSecurity(verificationCode: "123456", isVerified: false))))
    #expect(net.connectedNames(a) == ["carol"])
  }

  @Test func reInvitationFromAConnectedPeerReplacesTheOldSession() {
    var net = pair(policy: .ask)
    net.act(a) { m, x, now in m.invite(Fixture.bobID, context: [], now: now, into: &x) }
    net.run()
    net.act(b) { m, x, now in m.accept(peer: Fixture.aliceID, now: now, into: &x) }
    net.run()
    _ = net.take(a)
    _ = net.take(b)
    // Alice restarts (same id, fresh state) and invites bob again; bob's old link is silent.
    let old = net.nodes[a]!.sessionConnection(b)!
    net.silenced.insert(SimulatedNetwork.Link(node: b, connection: net.nodes[b]!.sessionConnection(a)!))
    net.closed.insert(SimulatedNetwork.Link(node: a, connection: old))
    net.add(Fixture.alice)
    net.discoverAll()
    _ = net.take(a)
    net.act(a) { m, x, now in m.invite(Fixture.bobID, context: [], now: now, into: &x) }
    net.run()
    let events = net.take(b).map(\.kind)
    #expect(events == ["updated", "disconnected", "connected"], "\(events)")
    #expect(net.take(a).map(\.kind) == ["connecting", "connected"])
  }
}
