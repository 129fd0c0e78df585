import NearbyCore
import Testing

/// After the network took a session, the peer's next invitation is accepted without asking
/// (it was in a session a moment ago) — but only for a while, only after a loss the network
/// caused, and never past the accept policy as it is now.
@Suite("Invitations accepted again after a lost session")
struct ResumableInvitationTests {
  let a = Fixture.aliceID
  let b = Fixture.bobID

  /// Alice and bob in a session (bob under `policy`, alice on his allow-list if `allowed`).
  func connected(_ policy: AcceptPolicy, allowed: Bool = false) -> SimulatedNetwork {
    var net = SimulatedNetwork()
    net.add(Fixture.alice, policy: .all)
    net.add(Fixture.bob, policy: policy) { if allowed { $0.allowList = [Fixture.aliceID] } }
    net.discoverAll()
    net.act(a) { m, x, now in m.invite(Fixture.bobID, context: [], now: now, into: &x) }
    net.run()
    if !allowed, policy == .ask { net.act(b) { m, x, now in m.accept(peer: Fixture.aliceID, now: now, into: &x) } }
    net.run()
    #expect(net.connectedNames(b) == ["alice"])
    _ = net.take(a)
    _ = net.take(b)
    return net
  }

  /// The network takes the session (a partition longer than the grace period); alice's
  /// process is replaced, and she invites bob again after `after`.
  func loseAndInviteAgain(_ net: inout SimulatedNetwork, after: Duration = .zero, before change: (inout SimulatedNetwork) -> Void = { _ in }) {
    net.partition(a, b)
    net.advance(by: .seconds(40))
    #expect(net.connectedNames(b).isEmpty)
    _ = net.take(b)
    change(&net)
    net.advance(by: after)
    net.add(Fixture.alice, policy: .all)
    net.heal(a, b)
    net.discoverAll()
    _ = net.take(b)
    net.act(a) { m, x, now in m.invite(Fixture.bobID, context: [], now: now, into: &x) }
    net.run()
  }

  @Test func afterALossThePeerIsAcceptedWithoutAsking() {
    var net = connected(.ask)
    loseAndInviteAgain(&net)
    #expect(net.take(b).map(\.kind).contains("connected"))
  }

  /// A relay's operator took alice off the allow-list: her invitation is declined, however
  /// her last session ended. (It was accepted.)
  @Test func aPeerTakenOffTheAllowListIsNotLetBackIn() {
    var net = connected(.none, allowed: true)
    loseAndInviteAgain(&net) { net in
      net.act(Fixture.bobID) { m, _, _ in m.setAcceptPolicy(.none, allowList: []) }
    }
    #expect(!net.take(b).map(\.kind).contains("connected"))
    #expect(net.take(a).contains(.declined(Fixture.bob, .notAllowed)))
  }

  /// Ten minutes later the person is asked again.
  @Test func longAfterTheLossThePersonIsAskedAgain() {
    var net = connected(.ask)
    loseAndInviteAgain(&net, after: .seconds(601), before: { _ in })
    let kinds = net.take(b).map(\.kind)
    #expect(kinds.contains("invitation") && !kinds.contains("connected"), "\(kinds)")
  }

  /// A session that ended with the peer's ERROR is not the network's doing: asked again.
  @Test func afterAnErrorThePersonIsAskedAgain() {
    var net = connected(.ask)
    let connection = net.nodes[b]!.sessionConnection(Fixture.aliceID)!
    net.act(b) { m, x, now in
      m.received([.error(code: .busy, message: "going")], on: connection, now: now, into: &x)
    }
    net.run()
    #expect(net.connectedNames(b).isEmpty)
    _ = net.take(b)
    net.add(Fixture.alice, policy: .all)
    net.discoverAll()
    net.act(a) { m, x, now in m.invite(Fixture.bobID, context: [], now: now, into: &x) }
    net.run()
    let kinds = net.take(b).map(\.kind)
    #expect(kinds.contains("invitation") && !kinds.contains("connected"), "\(kinds)")
  }
}

/// A DNS-SD record anybody can publish with a peer's id.
@Suite("Forged discovery records")
struct ForgedDiscoveryTests {
  /// `a` and `b`, each discovered by the other, in a session `a` began.
  static func inSession(_ a: Peer, _ b: Peer) -> SimulatedNetwork {
    var net = SimulatedNetwork()
    net.add(a, policy: .all)
    net.add(b, policy: .all)
    net.discoverAll()
    net.act(a.id) { m, x, now in m.invite(b.id, context: [], now: now, into: &x) }
    net.run()
    #expect(net.connectedNames(a.id) == [b.name.value])
    _ = net.take(a.id)
    return net
  }

  /// A record saying bob is a relay, while alice has a session with him: bob's HELLO said he
  /// is not, and messages to everyone still reach him, tracked. (They skipped him.)
  @Test func aRecordCannotMakeAPeerInASessionARelay() {
    var net = Self.inSession(Fixture.alice, Fixture.bob)
    let forged = DiscoveredPeer(
      advertisement: PeerAdvertisement(peer: Fixture.bob, isRelay: true), hostName: "mallory.local.",
      endpoints: [Endpoint(host: "192.0.2.66", port: 1)])
    net.act(Fixture.aliceID) { m, x, _ in m.discovered(forged, into: &x) }
    _ = net.take(Fixture.bobID)
    var id: MessageID = 0
    net.act(Fixture.aliceID) { m, x, now in id = m.send(Array("to all".utf8), to: .all, timestamp: 0, now: now, into: &x) }
    net.run()
    #expect(net.receivedTexts(Fixture.bobID) == ["to all"])
    #expect(net.take(Fixture.aliceID).contains(.delivered(messageID: id, to: Fixture.bob)))
  }

  /// A record with bob's id and the name "alice" while carol has a session with bob: carol
  /// hears of bob by the name his handshake proved. (The record's name retitled bob's
  /// conversation in the chat.)
  @Test func aRecordCannotRenameAPeerInASession() {
    var net = Self.inSession(Fixture.carol, Fixture.bob)
    let forged = DiscoveredPeer(
      advertisement: PeerAdvertisement(peer: Peer(id: Fixture.bobID, name: try! DisplayName("alice"))), hostName: "mallory.local.",
      endpoints: [Endpoint(host: "192.0.2.66", port: 1)])
    net.act(Fixture.carolID) { m, x, _ in m.discovered(forged, into: &x) }
    let names = net.take(Fixture.carolID).compactMap { event -> String? in
      if case .updated(let found) = event { found.peer.name.value } else { nil }
    }
    #expect(names == ["bob"])
    #expect(net.connectedNames(Fixture.carolID) == ["bob"])
  }

  /// While alice's session with bob waits to resume, a record names mallory's host for bob's
  /// id: alice's attempts start where bob last answered, then that address, and the
  /// session resumes. (Every attempt went to mallory, whose handshake is not bob's, until
  /// the grace period ended the session.)
  @Test func aRecordNamingAnotherHostCannotStopASessionFromResuming() {
    var net = Self.inSession(Fixture.alice, Fixture.bob)
    net.add(Fixture.carol, policy: .all)
    net.partition(Fixture.aliceID, Fixture.bobID)
    net.advance(by: .seconds(3))
    let forged = DiscoveredPeer(
      advertisement: PeerAdvertisement(peer: Fixture.bob), hostName: "carol.local.", endpoints: [Endpoint(host: Fixture.carolID.hex, port: 1)])
    net.act(Fixture.aliceID) { m, x, _ in m.discovered(forged, into: &x) }
    net.heal(Fixture.aliceID, Fixture.bobID)
    net.advance(by: .seconds(10))
    #expect(net.take(Fixture.aliceID).contains(.reconnected(Fixture.bob)))
    #expect(net.connectedNames(Fixture.aliceID) == ["bob"])
  }

  /// The same with a record naming 20 other addresses, newer than bob's own: every attempt
  /// begins where bob last answered. (The 16 endpoints an attempt keeps were all the
  /// record's, and the session ended.)
  @Test func aRecordNamingManyOtherAddressesCannotCrowdOutWhereThePeerAnswered() {
    var net = Self.inSession(Fixture.alice, Fixture.bob)
    net.partition(Fixture.aliceID, Fixture.bobID)
    net.advance(by: .seconds(3))
    let forged = DiscoveredPeer(
      advertisement: PeerAdvertisement(peer: Fixture.bob), hostName: "mallory.local.",
      endpoints: (1...20).map { Endpoint(host: "192.0.2.\($0)", port: 1) })
    net.act(Fixture.aliceID) { m, x, _ in m.discovered(forged, into: &x) }
    net.heal(Fixture.aliceID, Fixture.bobID)
    net.advance(by: .seconds(10))
    #expect(net.take(Fixture.aliceID).contains(.reconnected(Fixture.bob)))
    #expect(net.connectedNames(Fixture.aliceID) == ["bob"])
  }
}
