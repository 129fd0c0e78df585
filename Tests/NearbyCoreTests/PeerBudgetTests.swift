import NearbyCore
import Testing

/// The peers a session keeps are shared fairly between the relay connections that name them
/// and the federation's presence (SessionStateMachine+PeerBudget): whoever filled the budget
/// first cannot keep everybody else out.
@Suite("The peer budget is shared between relays and presence")
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

  /// `count` made-up peers (each with a key that owns its id), numbered from `first`.
  static func madeUp(_ count: Int, first: Int, group: UInt64) -> [Frame.Roster.Entry] {
    (first..<first + count).map { index in
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

  /// Whether the hub reaches `entries`' peers through `relay`.
  static func reaches(_ entries: [Frame.Roster.Entry], through relay: Peer, _ net: SimulatedNetwork) -> Int {
    let routes = Dictionary(net.nodes[hub.id]!.relayedPeers.map { ($0.peer.id, $0.via.id) }, uniquingKeysWith: { first, _ in first })
    return entries.count { routes[$0.peer.id] == relay.id }
  }

  static func closedForRosters(_ events: [SessionEvent]) -> [String] {
    events.compactMap { event in
      if case .status(.connectionRejected(let peer, let reason)) = event, reason.hasPrefix("ROSTER limit") {
        "\(peer?.name.value ?? "?"): \(reason)"
      } else {
        nil
      }
    }
  }

  /// Two connections that say they are relays fill the hub's budget with made-up peers,
  /// half each; an honest relay that names ten real ones then gets them all in, and stays
  /// connected (it used to be closed with ERROR `resourceExhausted`: "with its roster this
  /// session would know more than … peers"). The flooders give up routes instead, ten in
  /// all (one room per peer named); the budget holds.
  @Test func relaysThatFilledTheBudgetMakeRoomForOneThatNamedFewer() {
    var net = Self.network(relays: [Self.sybil1, Self.sybil2, Self.honest])
    let before = net.nodes[Self.hub.id]!.knownPeerCount
    let share = (Self.budget - before) / 2
    let flood1 = Self.madeUp(share, first: 0, group: 1)
    let flood2 = Self.madeUp(Self.budget - before - share, first: 0, group: 2)
    Self.roster(flood1, from: Self.sybil1, &net)
    Self.roster(flood2, from: Self.sybil2, &net)
    #expect(net.nodes[Self.hub.id]!.knownPeerCount == Self.budget, "the flood filled the budget")
    let real = Self.madeUp(10, first: 0, group: 3)
    Self.roster(real, from: Self.honest, &net)
    let events = net.take(Self.hub.id)
    #expect(Self.closedForRosters(events).isEmpty, "\(Self.closedForRosters(events))")
    #expect(net.connectedNames(Self.hub.id).sorted() == ["honest", "sybil1", "sybil2"])
    #expect(Self.reaches(real, through: Self.honest, net) == 10, "the honest relay's peers are all reachable")
    let hub = net.nodes[Self.hub.id]!
    #expect(hub.knownPeerCount == Self.budget)
    #expect(hub.relayStatistics.peersLeftOut == 10)
    let kept1 = Self.reaches(flood1, through: Self.sybil1, net)
    let kept2 = Self.reaches(flood2, through: Self.sybil2, net)
    #expect(kept1 + kept2 == flood1.count + flood2.count - 10, "kept \(kept1) and \(kept2)")
  }

  /// Two flooders: the second takes room from the first until they named as many, and is
  /// closed when it asks for more than that; the first keeps its share.
  @Test func aSecondFlooderGetsItsShareAndNoMore() {
    var net = Self.network(relays: [Self.sybil1, Self.sybil2])
    let before = net.nodes[Self.hub.id]!.knownPeerCount
    Self.roster(Self.madeUp(Self.perRelay, first: 0, group: 1), from: Self.sybil1, &net)
    Self.roster(Self.madeUp(Self.perRelay, first: 0, group: 2), from: Self.sybil2, &net)
    let closed = Self.closedForRosters(net.take(Self.hub.id))
    #expect(closed.count == 1 && closed.first?.hasPrefix("sybil2") == true, "\(closed)")
    #expect(net.connectedNames(Self.hub.id) == ["sybil1"])
    // sybil2's peers went with its connection; sybil1 kept half of the room, give or take one.
    let kept = Self.reaches(Self.madeUp(Self.perRelay, first: 0, group: 1), through: Self.sybil1, net)
    #expect(abs(kept - (Self.budget - before) / 2) <= 1, "sybil1 kept \(kept)")
  }

  /// At the budget, the relay that named the most peers is the one refused: more made-up
  /// peers from it close its connection, and the others keep theirs.
  @Test func theRelayThatNamedTheMostIsClosedAtTheBudget() {
    var net = Self.network(relays: [Self.sybil1, Self.honest])
    let real = Self.madeUp(10, first: 0, group: 3)
    Self.roster(real, from: Self.honest, &net)
    // 30 fit beside the two relays and the honest ten only partly: the flood takes what is
    // left, then asks for more while it is the one that named the most.
    Self.roster(Self.madeUp(Self.perRelay, first: 0, group: 1), from: Self.sybil1, &net)
    let events = net.take(Self.hub.id)
    let closed = Self.closedForRosters(events)
    #expect(closed.count == 1 && closed.first?.hasPrefix("sybil1") == true, "\(closed)")
    #expect(closed.first?.contains("no relay named more peers than it") == true, "\(closed)")
    #expect(net.connectedNames(Self.hub.id) == ["honest"])
    #expect(Self.reaches(real, through: Self.honest, net) == 10)
    #expect(net.nodes[Self.hub.id]!.relayStatistics.peersLeftOut == 0)
  }

  /// A flood of presence on NATS filled a federated relay's budget (each entry with a key
  /// that owns its id); a relay connection's roster then takes room from the federation
  /// (which is told, to announce those peers again later), and the presence left out is
  /// refused while the federation holds more than the relay.
  @Test func aPresenceFloodMakesRoomForARelaysPeers() {
    var fed = SimulatedFederation()
    fed.net = Self.network(relays: [Self.honest], federated: true)
    fed.sites[Self.hub.id] = "hq"
    fed.ledgers[Self.hub.id] = FederationLedger(limit: fed.limit)
    let site = PeerSite(name: "elsewhere", isOnline: true)
    let flood = Self.madeUp(60, first: 0, group: 5)
    let answers = flood.map { entry in
      fed.net.act(Self.hub.id) { m, x, t in m.federationPeerUpdated(entry.peer, publicKey: entry.publicKey, site: site, now: t, into: &x) }
    }
    // The honest relay is one of the 40 (the hub does not count itself).
    #expect(answers.count { $0 == .taken } == Self.budget - 1, "\(answers)")
    let real = Self.madeUp(10, first: 0, group: 3)
    Self.roster(real, from: Self.honest, &fed.net)
    #expect(Self.closedForRosters(fed.net.take(Self.hub.id)).isEmpty)
    #expect(Self.reaches(real, through: Self.honest, fed.net) == 10)
    #expect(fed.net.nodes[Self.hub.id]!.knownPeerCount <= Self.budget)
    fed.run()
    #expect(fed.leftOut.count == 10, "\(fed.leftOut.count) peers' presence left out")
    // Presence again for those left out: refused while the federation gave more than the
    // relay, and the relay's peers stay.
    var answer = SessionStateMachine.PresenceAnswer.taken
    for (_, again) in fed.leftOut {
      answer = fed.net.act(Self.hub.id) { m, x, t in
        m.federationPeerUpdated(
          Peer(id: again, name: try! DisplayName("again")), publicKey: SimulatedNetwork.key(of: again), site: site, now: t, into: &x)
      }
    }
    #expect(answer == .full)
    #expect(Self.reaches(real, through: Self.honest, fed.net) == 10)
  }
}
