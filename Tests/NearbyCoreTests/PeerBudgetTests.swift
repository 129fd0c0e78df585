import NearbyCore
import Testing

/// No one source fills the room for peers (SessionStateMachine+PeerBudget): the relay
/// connections from one host name together what one relay connection may, and the
/// federation's presence takes at most half of the room.
@Suite("The room for peers is shared between hosts and presence")
struct PeerBudgetTests {
  static let hub = Peer(id: PeerID(hex: "000000000000000000000000000001f0")!, name: try! DisplayName("hub"))
  static let sybil1 = Peer(id: PeerID(hex: "000000000000000000000000000001f1")!, name: try! DisplayName("sybil1"))
  static let sybil2 = Peer(id: PeerID(hex: "000000000000000000000000000001f2")!, name: try! DisplayName("sybil2"))
  static let honest = Peer(id: PeerID(hex: "000000000000000000000000000001f3")!, name: try! DisplayName("honest"))
  static let other = Peer(id: PeerID(hex: "000000000000000000000000000001f4")!, name: try! DisplayName("other"))
  /// The hub knows at most this many peers, and the relay connections from one host may
  /// give it this many.
  static let budget = 40
  static let perRelay = 15
  /// Where both sybils connect from.
  static let sybilHost = "192.0.2.66"

  /// The hub (a relay, federated with `federated`) in session with `relays`; the sybils
  /// share one host, every other node has its own.
  static func network(relays: [Peer], federated: Bool = false) -> SimulatedNetwork {
    var net = SimulatedNetwork()
    net.add(hub, policy: .all) {
      $0.capabilities = federated ? [.relay, .federation] : .relay
      if federated { $0.federation = FederationSettings(site: "hq") }
      $0.rosterLimits.peers = budget
      $0.rosterLimits.perRelay = perRelay
    }
    for relay in relays { net.add(relay, policy: .all) { $0.capabilities = .relay } }
    net.hosts[sybil1.id] = sybilHost
    net.hosts[sybil2.id] = sybilHost
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

  static func closedForRosters(_ events: [SessionEvent]) -> [String] {
    events.compactMap { event in
      if case .status(.connectionRejected(let peer, let reason)) = event, reason.hasPrefix("ROSTER limit") {
        "\(peer?.name.value ?? "?"): \(reason)"
      } else {
        nil
      }
    }
  }

  /// Two connections from one host that say they are relays: the second is closed once the
  /// two together name what one relay connection may, and an honest relay from another
  /// host then gets all ten of its peers in and stays connected. Before, the two filled 30
  /// of the 40 places, and the honest relay was closed with ERROR `resourceExhausted` when
  /// its roster took the hub past 40.
  @Test func relayConnectionsFromOneHostShareOneShare() {
    var net = Self.network(relays: [Self.sybil1, Self.sybil2, Self.honest])
    let flood1 = Self.madeUp(Self.perRelay, group: 1)
    Self.roster(flood1, from: Self.sybil1, &net)
    Self.roster(Self.madeUp(Self.perRelay, group: 2), from: Self.sybil2, &net)
    let closed = Self.closedForRosters(net.take(Self.hub.id))
    #expect(closed == ["sybil2: ROSTER limit: the relay connections from its host (\(Self.sybilHost)) name more than \(Self.perRelay) peers"])
    #expect(Self.reaches(flood1, through: Self.sybil1, net) == Self.perRelay)
    let real = Self.madeUp(10, group: 3)
    Self.roster(real, from: Self.honest, &net)
    #expect(Self.closedForRosters(net.take(Self.hub.id)).isEmpty)
    #expect(net.connectedNames(Self.hub.id).sorted() == ["honest", "sybil1"])
    #expect(Self.reaches(real, through: Self.honest, net) == 10, "the honest relay's peers are all reachable")
    #expect(net.nodes[Self.hub.id]!.knownPeerCount <= Self.budget)
  }

  /// Relays on hosts of their own each take a full share (until the room is full).
  @Test func relaysOnHostsOfTheirOwnEachTakeAShare() {
    var net = Self.network(relays: [Self.honest, Self.other])
    let first = Self.madeUp(Self.perRelay, group: 4)
    let second = Self.madeUp(Self.perRelay, group: 5)
    Self.roster(first, from: Self.honest, &net)
    Self.roster(second, from: Self.other, &net)
    #expect(Self.closedForRosters(net.take(Self.hub.id)).isEmpty)
    #expect(Self.reaches(first, through: Self.honest, net) == Self.perRelay)
    #expect(Self.reaches(second, through: Self.other, net) == Self.perRelay)
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
}
