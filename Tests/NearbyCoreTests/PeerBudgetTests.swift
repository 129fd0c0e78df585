import NearbyCore
import Testing

/// Whoever fills the room for peers first cannot keep everybody else out
/// (SessionStateMachine+PeerBudget): at the limit, the relay connection whose rosters name
/// the most peers is closed, and presence takes at most half of the room.
@Suite("The room for peers: the relay naming the most goes first")
struct PeerBudgetTests {
  static let hub = Peer(id: PeerID(hex: "000000000000000000000000000001f0")!, name: try! DisplayName("hub"))
  static let sybil1 = Peer(id: PeerID(hex: "000000000000000000000000000001f1")!, name: try! DisplayName("sybil1"))
  static let sybil2 = Peer(id: PeerID(hex: "000000000000000000000000000001f2")!, name: try! DisplayName("sybil2"))
  static let honest = Peer(id: PeerID(hex: "000000000000000000000000000001f3")!, name: try! DisplayName("honest"))
  /// The hub knows at most this many peers, and one relay connection may give it this many.
  static let budget = 40
  static let perRelay = 30

  /// The hub (a relay, federated with `federated`) in session with `relays`.
  static func network(relays: [Peer], federated: Bool = false) -> SimulatedNetwork {
    var net = SimulatedNetwork()
    net.add(hub, policy: .all) {
      $0.capabilities = federated ? [.relay, .federation] : .relay
      if federated { $0.federation = FederationSettings(site: "hq") }
      $0.rosterLimits.peers = budget
      $0.rosterLimits.perRelay = perRelay
    }
    for relay in relays { net.add(relay, policy: .all) { $0.capabilities = .relay } }
    net.discoverAll()
    for relay in relays { net.act(hub.id) { m, x, now in m.invite(relay.id, context: [], now: now, into: &x) } }
    net.run()
    for id in net.nodes.keys { _ = net.take(id) }
    return net
  }

  /// `count` made-up peers (each with a key that owns its id).
  static func madeUp(_ count: Int, group: UInt64) -> [Frame.Roster.Entry] {
    (0..<count).map { index in
      let peer = Peer(id: PeerID(high: group, low: UInt64(index)), name: try! DisplayName("p\(group)-\(index)"))
      return Frame.Roster.Entry(peer: peer, hops: 1, publicKey: SimulatedNetwork.key(of: peer.id))
    }
  }

  /// `relay`'s roster arriving at the hub.
  static func roster(_ entries: [Frame.Roster.Entry], from relay: Peer, _ net: inout SimulatedNetwork) {
    net.act(hub.id) { m, x, now in
      m.received([.roster(Frame.Roster(kind: .add, entries: entries))], on: m.sessionConnection(relay.id)!, now: now, into: &x)
    }
    net.run()
  }

  /// How many of `entries`' peers the hub reaches through `relay`.
  static func reaches(_ entries: [Frame.Roster.Entry], through relay: Peer, _ net: SimulatedNetwork) -> Int {
    let routes = Dictionary(net.nodes[hub.id]!.relayedPeers.map { ($0.peer.id, $0.via.id) }, uniquingKeysWith: { first, _ in first })
    return entries.count { routes[$0.peer.id] == relay.id }
  }

  /// The relay connections the hub closed for their rosters: "name: reason".
  static func closedForRosters(_ events: [SessionEvent]) -> [String] {
    events.compactMap { event in
      if case .status(.connectionRejected(let peer, let reason)) = event, reason.hasPrefix("ROSTER limit") {
        "\(peer?.name.value ?? "?"): \(reason)"
      } else {
        nil
      }
    }
  }

  /// Two connections that say they are relays fill the hub's room with made-up peers; an
  /// honest relay that then names ten real ones gets them all in and stays connected: the
  /// flooder naming the most is closed instead (it used to be the honest relay, closed with
  /// ERROR `resourceExhausted` because its roster took the hub past 40).
  @Test func theFlooderIsClosedNotTheHonestRelayThatNamesFewer() {
    var net = Self.network(relays: [Self.sybil1, Self.sybil2, Self.honest])
    Self.roster(Self.madeUp(Self.perRelay, group: 1), from: Self.sybil1, &net)
    Self.roster(Self.madeUp(Self.perRelay, group: 2), from: Self.sybil2, &net)
    #expect(net.nodes[Self.hub.id]!.knownPeerCount <= Self.budget)
    // Filling the room, the second flooder outgrew the first, which was closed.
    let flooding = Self.closedForRosters(net.take(Self.hub.id))
    #expect(
      flooding.count == 1 && flooding.first?.hasPrefix("sybil1: ROSTER limit: this session knows as many peers as it may (40)") == true, "\(flooding)"
    )
    let real = Self.madeUp(10, group: 3)
    Self.roster(real, from: Self.honest, &net)
    let closed = Self.closedForRosters(net.take(Self.hub.id))
    #expect(closed.count == 1 && closed.first?.hasPrefix("sybil2: ") == true, "\(closed)")
    #expect(net.connectedNames(Self.hub.id) == ["honest"])
    #expect(Self.reaches(real, through: Self.honest, net) == 10, "the honest relay's peers are all reachable")
    #expect(net.nodes[Self.hub.id]!.knownPeerCount <= Self.budget)
  }

  /// At the limit, the relay that asks is closed when no other names more peers than it.
  @Test func aRelayThatNamesTheMostIsClosedWhenItAsksForMore() {
    var net = Self.network(relays: [Self.sybil1, Self.honest])
    let real = Self.madeUp(10, group: 3)
    Self.roster(real, from: Self.honest, &net)
    Self.roster(Self.madeUp(Self.perRelay, group: 1), from: Self.sybil1, &net)
    let closed = Self.closedForRosters(net.take(Self.hub.id))
    #expect(closed.count == 1 && closed.first?.hasPrefix("sybil1: ") == true, "\(closed)")
    #expect(closed.first?.contains("and no other relay's rosters name more") == true, "\(closed)")
    #expect(net.connectedNames(Self.hub.id) == ["honest"])
    #expect(Self.reaches(real, through: Self.honest, net) == 10)
  }

  /// A relay that names the most sends a full roster of new peers while the room is full:
  /// it asks as the one naming the most (what it named before is still known until the
  /// frame ends), and is closed; the honest relay that names fewer stays. (Counted as
  /// naming nothing, it had the honest relay closed.)
  @Test func aFullRosterAsksForRoomAsWhatItNamedBefore() {
    var net = Self.network(relays: [Self.sybil1, Self.honest])
    let real = Self.madeUp(8, group: 3)
    Self.roster(real, from: Self.honest, &net)
    Self.roster(Self.madeUp(Self.perRelay, group: 1), from: Self.sybil1, &net)
    #expect(net.nodes[Self.hub.id]!.knownPeerCount == Self.budget)
    _ = net.take(Self.hub.id)
    net.act(Self.hub.id) { m, x, now in
      m.received(
        [.roster(Frame.Roster(kind: .full, entries: Self.madeUp(Self.perRelay, group: 9)))], on: m.sessionConnection(Self.sybil1.id)!, now: now,
        into: &x)
    }
    net.run()
    let closed = Self.closedForRosters(net.take(Self.hub.id))
    #expect(closed.count == 1 && closed.first?.hasPrefix("sybil1: ") == true, "\(closed)")
    #expect(net.connectedNames(Self.hub.id) == ["honest"])
    #expect(Self.reaches(real, through: Self.honest, net) == 8)
  }

  /// The state machine marks a peer's first `reachable` fresh (a reader far behind then
  /// makes nothing of it and a later `unreachable`); a better route through another relay
  /// is no fresh news (nothing is emitted for it).
  @Test func aFirstReachableIsFreshAndAMoveIsNot() {
    // A peer (not a relay: a relay tells its peers, not its application) with two relays.
    let alice = Peer(id: PeerID(hex: "000000000000000000000000000001fa")!, name: try! DisplayName("alice"))
    var net = SimulatedNetwork()
    net.add(alice, policy: .all)
    for relay in [Self.sybil1, Self.honest] { net.add(relay, policy: .all) { $0.capabilities = .relay } }
    net.discoverAll()
    for relay in [Self.sybil1, Self.honest] { net.act(alice.id) { m, x, now in m.invite(relay.id, context: [], now: now, into: &x) } }
    net.run()
    let peer = Self.madeUp(1, group: 4)
    var first: [SessionAction] = []
    net.act(alice.id) { m, x, now in
      m.received([.roster(Frame.Roster(kind: .add, entries: peer))], on: m.sessionConnection(Self.sybil1.id)!, now: now, into: &x)
      first = x
    }
    net.run()
    let fresh = first.contains { if case .emitFresh(.reachable(let p, _)) = $0 { p.id == peer[0].peer.id } else { false } }
    #expect(fresh, "\(first)")
    // Closer through the honest relay (1 hop against 3): no fresh reachable.
    var moved: [SessionAction] = []
    let closer = [Frame.Roster.Entry(peer: peer[0].peer, hops: 1, publicKey: peer[0].publicKey)]
    let farther = [Frame.Roster.Entry(peer: peer[0].peer, hops: 3, publicKey: peer[0].publicKey)]
    net.act(alice.id) { m, x, now in
      m.received([.roster(Frame.Roster(kind: .add, entries: farther))], on: m.sessionConnection(Self.sybil1.id)!, now: now, into: &x)
      m.received([.roster(Frame.Roster(kind: .add, entries: closer))], on: m.sessionConnection(Self.honest.id)!, now: now, into: &x)
      moved = x
    }
    net.run()
    #expect(!moved.contains { if case .emitFresh = $0 { true } else { false } }, "\(moved)")
    #expect(net.nodes[alice.id]!.relayedPeers.first { $0.peer.id == peer[0].peer.id }?.via.id == Self.honest.id)
  }

  /// A flood of presence on NATS (each entry with a key that owns its id) takes half of a
  /// federated relay's room, and a relay connection's roster still fits in the other half.
  /// Before, presence took all of it and the honest relay was closed.
  @Test func presenceTakesAtMostHalfTheRoom() {
    var net = Self.network(relays: [Self.honest], federated: true)
    let site = PeerSite(name: "elsewhere", isOnline: true)
    let flood = Self.madeUp(60, group: 6)
    let answers = flood.map { entry in
      net.act(Self.hub.id) { m, x, t in m.federationPeerUpdated(entry.peer, publicKey: entry.publicKey, site: site, now: t, into: &x) }
    }
    #expect(answers.count { $0 == .taken } == Self.budget / 2, "\(answers)")
    #expect(answers.suffix(60 - Self.budget / 2).allSatisfy { $0 == .full })
    let real = Self.madeUp(10, group: 3)
    Self.roster(real, from: Self.honest, &net)
    #expect(Self.closedForRosters(net.take(Self.hub.id)).isEmpty)
    #expect(Self.reaches(real, through: Self.honest, net) == 10)
    // A peer presence gave is still updated at the limit.
    let again = net.act(Self.hub.id) { m, x, t in
      m.federationPeerUpdated(flood[0].peer, publicKey: flood[0].publicKey, site: PeerSite(name: "elsewhere", isOnline: false), now: t, into: &x)
    }
    #expect(again == .taken)
  }

  /// Sessions that end at a federated relay leave their peers behind as offline (messages
  /// to them wait on NATS), within presence's half of the room: 30 peers with keys of their
  /// own, each joining and leaving, used to leave all 30 behind (for the week messages are
  /// kept, without bound).
  @Test func sessionsThatEndLeaveOfflinePeersWithinPresencesHalf() {
    var net = Self.network(relays: [], federated: true)
    let visitors = (1...30).map { Peer(id: PeerID(high: 7, low: UInt64($0)), name: try! DisplayName("visitor\($0)")) }
    for visitor in visitors {
      net.add(visitor, policy: .all)
      // By address: the hub does not discover them (discovered peers are kept anyway).
      net.act(visitor.id) { m, x, _ in m.invite(endpoints: [Endpoint(host: Self.hub.id.hex, port: 1)], context: [], into: &x) }
      net.run()
      net.act(visitor.id) { m, x, now in m.leave(Self.hub.id, now: now, into: &x) }
      net.run()
    }
    #expect(net.nodes[Self.hub.id]!.connectedPeers.isEmpty)
    #expect(net.framesSent.keys.contains { $0.node == visitors[29].id }, "the last visitor had a session")
    #expect(net.nodes[Self.hub.id]!.knownPeerCount <= Self.budget / 2 + 1, "\(net.nodes[Self.hub.id]!.knownPeerCount) peers kept")
    #expect(net.nodes[Self.hub.id]!.knownPeerCount >= Self.budget / 2, "the first ones are kept, offline")
  }
}
