import NearbyCore
import Testing

@Suite("Relays on the simulated network")
struct RelayStateMachineTests {
  static let r1 = Peer(id: PeerID(hex: "00000000000000000000000000000101")!, name: try! DisplayName("r1"))
  static let r2 = Peer(id: PeerID(hex: "00000000000000000000000000000102")!, name: try! DisplayName("r2"))
  let a = Fixture.aliceID
  let c = Fixture.carolID

  /// alice — r1 — carol (and optionally r1 — r2 with carol behind r2 instead).
  func network(twoRelays: Bool = false) -> SimulatedNetwork {
    var net = SimulatedNetwork()
    net.add(Self.r1, policy: .all) { $0.capabilities = .relay }
    if twoRelays { net.add(Self.r2, policy: .all) { $0.capabilities = .relay } }
    net.add(Fixture.alice, policy: .all)
    net.add(Fixture.carol, policy: .all)
    net.discoverAll()
    for id in net.nodes.keys { _ = net.take(id) }
    net.act(a) { m, x, now in m.invite(Self.r1.id, context: [], now: now, into: &x) }
    if twoRelays {
      net.act(Self.r1.id) { m, x, now in m.invite(Self.r2.id, context: [], now: now, into: &x) }
      net.run()
      net.act(c) { m, x, now in m.invite(Self.r2.id, context: [], now: now, into: &x) }
    } else {
      net.act(c) { m, x, now in m.invite(Self.r1.id, context: [], now: now, into: &x) }
    }
    net.run()
    return net
  }

  /// A relay with `connectFound` and 100 peers found (anyone can publish records, each with
  /// an address of its choosing): 16 invitations on their way at once, at most 2 to one
  /// address, in the order the peers were found (not of their ids, which a publisher makes
  /// up); the next one only when one of them ends. (All 100 were dialled at once, and again
  /// after each backoff.)
  @Test func aRelayInvitesAtMost16FoundPeersAtOnceAnd2PerAddressInTheOrderFound() throws {
    var configuration = SessionStateMachine.Configuration(local: Self.r1)
    configuration.capabilities = .relay
    configuration.connectFound = true
    configuration.endToEnd = SimulatedEndToEnd(local: Self.r1.id)
    var relay = SessionStateMachine(configuration: configuration, messageIDSeed: 1, invitationIDSeed: 1)
    var actions: [SessionAction] = []
    // The first 5 at one address, then one address each.
    let hosts = (0..<100).map { $0 < 5 ? "192.0.2.200" : "10.0.\($0 / 200).\($0 % 200 + 1)" }
    for (index, host) in hosts.enumerated() {
      let peer = Peer(id: PeerID.random(), name: try DisplayName("found-\(index)"))
      relay.discovered(
        DiscoveredPeer(advertisement: PeerAdvertisement(peer: peer), hostName: "h\(index).local.", endpoints: [Endpoint(host: host, port: 9)]),
        into: &actions)
    }
    func connects(_ actions: [SessionAction]) -> [(ConnectionID, String)] {
      actions.compactMap { if case .connect(let id, let endpoints) = $0 { (id, endpoints[0].host) } else { nil } }
    }
    actions = []
    relay.tick(now: .seconds(1), into: &actions)
    let first = connects(actions)
    #expect(first.count == 16)
    #expect(first.filter { $0.1 == "192.0.2.200" }.count == 2, "2 to one address")
    #expect(Set(first.map(\.1)) == Set(["192.0.2.200"] + hosts[5..<19]), "in the order found")
    actions = []
    relay.tick(now: .seconds(3), into: &actions)
    #expect(connects(actions).isEmpty, "16 on their way")
    relay.connectFailed(first.first { $0.1 != "192.0.2.200" }!.0, detail: "no answer within 5 s", now: .seconds(4), into: &actions)
    actions = []
    relay.tick(now: .seconds(5), into: &actions)
    #expect(connects(actions).map(\.1) == [hosts[19]], "one ended: the next found")
  }

  /// Carol's LAN record goes while alice reaches her through r1: alice keeps her, and a
  /// message to her still arrives. (The record of a peer with relay routes was dropped with
  /// its LAN record.)
  @Test func aPeerReachedThroughARelayOutlivesItsLANRecord() throws {
    var net = network()
    _ = net.take(a)
    net.act(a) { m, x, _ in m.lost(Fixture.carolID, into: &x) }
    #expect(net.take(a).contains(.lost(Fixture.carol)))
    #expect(net.nodes[a]!.peer(Fixture.carolID) != nil, "alice still knows carol")
    #expect(net.nodes[a]!.publicKey(of: Fixture.carolID) != nil, "and her key")
    var id: MessageID = 0
    net.act(a) { m, x, now in
      (id, _) = try! m.sendMessage(Array("still there?".utf8), to: .peers([Fixture.carolID]), timestamp: 1, now: now, into: &x)
    }
    net.run()
    #expect(net.receivedTexts(c) == ["still there?"])
    #expect(net.take(a).contains(.delivered(messageID: id, to: Fixture.carol)))
  }

  /// A peer posing as a relay sends rosters that carry sites, for entries whose keys do not
  /// own their ids: none is taken, and no site is kept (each was, for ever: a burst of 256
  /// rosters of 4 096 entries, then 64 a second). A site of an entry taken goes when the
  /// peer is forgotten.
  @Test func sitesOfForgedRosterEntriesAreNotKeptAndTakenOnesGoWithTheirPeer() throws {
    var net = network()
    let relay = try #require(net.nodes[a]!.sessionConnection(Self.r1.id))
    let forged = (0..<2000).map { index in
      let id = PeerID.random()
      return Frame.Roster.Entry(
        peer: Peer(id: id, name: try! DisplayName("fake-\(index)")), hops: 1, publicKey: SimulatedNetwork.key(of: PeerID.random()),
        site: PeerSite(name: "elsewhere", isOnline: true))
    }
    net.act(a) { m, x, now in m.received([.roster(Frame.Roster(kind: .add, entries: forged, carriesSites: true))], on: relay, now: now, into: &x) }
    #expect(net.nodes[a]!.knownSiteCount == 0)
    // An entry whose key owns its id: taken, with its site.
    let dave = Peer(id: PeerID.random(), name: try! DisplayName("dave"))
    let real = Frame.Roster.Entry(peer: dave, hops: 1, publicKey: SimulatedNetwork.key(of: dave.id), site: PeerSite(name: "far", isOnline: true))
    net.act(a) { m, x, now in m.received([.roster(Frame.Roster(kind: .add, entries: [real], carriesSites: true))], on: relay, now: now, into: &x) }
    #expect(net.nodes[a]!.knownSiteCount == 1)
    #expect(net.nodes[a]!.site(of: dave.id) == PeerSite(name: "far", isOnline: true))
    // Removed (by a roster without sites): the relay no longer routes to dave, alice forgets
    // him, and his site with him.
    net.act(a) { m, x, now in m.received([.roster(Frame.Roster(kind: .remove, entries: [real], carriesSites: false))], on: relay, now: now, into: &x)
    }
    #expect(net.nodes[a]!.knownSiteCount == 0)
  }

  @Test func peersBehindOneRelayReachEachOtherWithDelivery() throws {
    var net = network()
    #expect(net.take(a).contains(.reachable(Fixture.carol, via: Self.r1)))
    #expect(net.take(c).contains(.reachable(Fixture.alice, via: Self.r1)))
    var id: MessageID = 0
    var queuedFor: [PeerID] = []
    net.act(a) { m, x, now in
      (id, queuedFor) = try! m.sendMessage(Array("hi carol".utf8), to: .peers([Fixture.carolID]), timestamp: 1, now: now, into: &x)
    }
    #expect(queuedFor == [Fixture.carolID])
    net.run()
    let received = net.take(c)
    guard case .message(let message)? = received.first else {
      Issue.record("carol got \(received)")
      return
    }
    #expect(message.from == Fixture.alice)
    #expect(message.id == id)
    #expect(message.isPrivate)
    #expect(net.take(a) == [.delivered(messageID: id, to: Fixture.carol)])
    // The relay delivers nothing to itself.
    #expect(!net.take(Self.r1.id).contains { $0.kind == "message" })

    // To all, the other way.
    net.act(c) { m, x, now in (id, queuedFor) = try! m.sendMessage([7], to: .all, timestamp: 2, now: now, into: &x) }
    #expect(queuedFor == [Fixture.aliceID])
    net.run()
    #expect(net.take(a).filter { $0.kind == "message" }.count == 1)
    #expect(net.take(c) == [.delivered(messageID: id, to: Fixture.alice)])
  }

  @Test func aPeerThatLeavesIsDroppedFromEveryRosterAtOnce() {
    var net = network()
    _ = net.take(a)
    net.act(c) { m, x, now in m.leave(Self.r1.id, now: now, into: &x) }
    net.run()
    #expect(net.take(a) == [.unreachable(Fixture.carol)])
    var refusal: SendError?
    net.act(a) { m, x, now in
      do throws(SendError) {
        try m.sendMessage([1], to: .peers([Fixture.carolID]), timestamp: 0, now: now, into: &x)
      } catch {
        refusal = error
      }
    }
    #expect(refusal == .notConnected([Fixture.carolID]))
    #expect(net.take(a).isEmpty)
  }

  /// A peer that connects and leaves every 4 ms: each time the relay has news for alice. It
  /// sent her a ROSTER for each (hundreds a second), more than a peer accepts from a relay (256
  /// at once, then 64 a second), so alice closed her connection to the relay within a second
  /// or two, and so would every peer of it. Paced, the news waits and goes together:
  /// alice stays, gets far fewer frames, and ends knowing where carol is.
  @Test func aPeerComingAndGoingDoesNotMakeTheRelaysOtherPeersLeave() {
    var net = network()
    _ = net.take(a)
    let start = net.now
    for _ in 0..<600 {
      net.act(c) { m, x, now in m.leave(Self.r1.id, now: now, into: &x) }
      net.advance(by: .milliseconds(2), step: .milliseconds(2))
      net.act(c) { m, x, now in m.invite(Self.r1.id, context: [], now: now, into: &x) }
      net.advance(by: .milliseconds(2), step: .milliseconds(2))
    }
    net.advance(by: .seconds(1))
    let events = net.take(a)
    // (Alice reconnects to a relay by herself: count what ended her connection.)
    let dropped = events.filter { $0.kind == "disconnected" || $0.kind == "status" }
    #expect(dropped.isEmpty, "\(dropped)")
    #expect(net.connectedNames(a) == ["r1"])
    let news = events.filter { $0.kind == "reachable" || $0.kind == "unreachable" }
    let seconds = Double((net.now - start).components.seconds) + 1
    let paced = Double(SessionStateMachine.rosterPace.burst) + SessionStateMachine.rosterPace.framesPerSecond * seconds
    #expect(Double(news.count) <= paced, "\(news.count) changes in \(seconds) s")
    #expect(news.last == .reachable(Fixture.carol, via: Self.r1))
    // And what alice hears now comes at once again.
    net.act(c) { m, x, now in m.leave(Self.r1.id, now: now, into: &x) }
    net.advance(by: .seconds(5))
    _ = net.take(a)
    net.act(c) { m, x, now in m.invite(Self.r1.id, context: [], now: now, into: &x) }
    net.run()
    #expect(net.take(a) == [.reachable(Fixture.carol, via: Self.r1)])
  }

  @Test func twoRelaysCarryMessagesOnceWithoutLoopsOrDuplicates() {
    var net = network(twoRelays: true)
    #expect(net.take(a).contains(.reachable(Fixture.carol, via: Self.r1)))
    #expect(net.take(c).contains(.reachable(Fixture.alice, via: Self.r2)))
    // Alice also connects to r2: two paths from alice to carol now.
    net.act(a) { m, x, now in m.invite(Self.r2.id, context: [], now: now, into: &x) }
    net.run()
    _ = net.take(a)
    for round in 0..<5 {
      var id: MessageID = 0
      net.act(a) { m, x, now in id = m.send([UInt8(round)], to: .all, timestamp: 0, now: now, into: &x) }
      net.run()
      let messages = net.take(c).filter { $0.kind == "message" }
      #expect(messages.count == 1, "round \(round): \(messages)")
      let delivered = net.take(a).filter { $0 == .delivered(messageID: id, to: Fixture.carol) }
      #expect(delivered.count == 1)
    }
    // Nothing keeps circulating: the network is quiet. Each message took one path (the
    // shortest: alice's envelope names carol, whom r2 reaches directly), so no copies arose.
    #expect(net.queue.isEmpty)
    let stats1 = net.nodes[Self.r1.id]!.relayStatistics
    let stats2 = net.nodes[Self.r2.id]!.relayStatistics
    #expect(stats1.forwardedMessages == 0)
    #expect(stats2.forwardedMessages == 5)
    #expect(stats1.duplicatesDropped + stats2.duplicatesDropped == 0)
  }

  @Test func unknownRecipientsAreReportedToTheSenderByTheRelay() {
    var net = network()
    _ = net.take(a)
    // Alice believes dave is behind r1 (a stale roster entry), r1 does not know him.
    let dave = Peer(id: PeerID(hex: "0000000000000000000000000000dddd")!, name: try! DisplayName("dave"))
    let daveKey = SimulatedNetwork.key(of: dave.id)
    net.act(a) { m, x, now in
      m.received(
        [.roster(Frame.Roster(kind: .add, entries: [Frame.Roster.Entry(peer: dave, hops: 1, publicKey: daveKey)]))],
        on: m.sessionConnection(Self.r1.id)!, now: now,
        into: &x)
    }
    _ = net.take(a)
    var id: MessageID = 0
    net.act(a) { m, x, now in id = m.send([1], to: .peers([dave.id]), timestamp: 0, now: now, into: &x) }
    net.run()
    let events = net.take(a)
    #expect(events == [.error(.undelivered(messageID: id, peer: dave, peerID: dave.id, reason: .remote(.unknownRecipient)))], "\(events)")
  }

  @Test func theHopLimitStopsForwardingBetweenRelays() {
    var net = network(twoRelays: true)
    _ = net.take(c)
    // A message for carol (behind r2) that arrives at r1 with hopLimit 1 may not cross to r2.
    let header = EnvelopeHeader(origin: a, messageID: 99, timestamp: 0, recipients: [c])
    let envelope = try! SimulatedEndToEnd(local: a).seal([1], header: header, toEveryone: false, recipientKeys: [SimulatedNetwork.key(of: c)]).get()
    let message = Frame.Message(id: 99, sender: a, timestamp: 0, hopLimit: 1, recipients: [c], body: envelope)
    net.act(Self.r1.id) { m, x, now in m.received([.message(message)], on: m.sessionConnection(Fixture.aliceID)!, now: now, into: &x) }
    net.run()
    #expect(!net.take(c).contains { $0.kind == "message" })
    #expect(net.nodes[Self.r1.id]!.relayStatistics.hopLimitDrops == 1)
  }

  @Test func peersReconnectToARestartedRelayByThemselvesWithBackoff() {
    var net = network()
    _ = net.take(a)
    let lost = net.nodes[a]!.sessionConnection(Self.r1.id)!
    // The relay is killed: its sockets close, then it starts again with the same identity.
    net.queue.append(.eof(a, lost))
    net.queue.append(.eof(c, net.nodes[c]!.sessionConnection(Self.r1.id)!))
    net.add(Self.r1, policy: .all) { $0.capabilities = .relay }
    net.run()
    // The session tries to resume; the restarted relay no longer knows it, so it ends, and
    // only then is carol, who was behind it, unreachable (messages to her waited meanwhile).
    #expect(net.take(a).map(\.kind) == ["reconnecting", "disconnected", "unreachable"])
    net.discoverAll()
    _ = net.take(Self.r1.id)
    net.advance(by: .seconds(3))
    let events = net.take(a).map(\.kind)
    #expect(events.contains("connected"), "\(events)")
    #expect(events.contains("reachable"))
    #expect(net.connectedNames(a) == ["r1"])
    #expect(net.connectedNames(c) == ["r1"])
  }

  @Test func backoffDoublesUpToThirtySeconds() {
    let delays = (1...8).map { SessionStateMachine.backoffForTesting(afterAttempts: $0) }
    #expect(delays == [.seconds(1), .seconds(2), .seconds(4), .seconds(8), .seconds(16), .seconds(30), .seconds(30), .seconds(30)])
  }

  @Test func seenMessagesForgetTheOldestBeyondTheirCapacity() {
    var seen = SeenMessages(capacity: 3)
    var results: [Bool] = []
    for id in 0..<3 { results.append(seen.insert(sender: Fixture.aliceID, id: UInt64(id))) }
    results.append(seen.insert(sender: Fixture.aliceID, id: 1))
    results.append(seen.insert(sender: Fixture.bobID, id: 1))  // another sender
    results.append(seen.insert(sender: Fixture.aliceID, id: 0))  // forgotten: evicted by bob's
    #expect(results == [true, true, true, false, true, true])
    #expect(seen.count == 3)
  }
}
