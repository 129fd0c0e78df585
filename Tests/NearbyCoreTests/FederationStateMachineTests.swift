import NearbyCore
import Testing

/// Relays that federate sites (PROTOCOL.md 9.6), on the simulated network with a stand-in
/// for NATS (``SimulatedFederation``): alice — r1 (site1), r2 (site2), carol — r3 (site3).
/// The relays never connect to each other; only the federation joins them.
@Suite("Federated relays on the simulated network")
struct FederationStateMachineTests {
  static let r1 = Peer(id: PeerID(hex: "00000000000000000000000000000201")!, name: try! DisplayName("r1"))
  static let r2 = Peer(id: PeerID(hex: "00000000000000000000000000000202")!, name: try! DisplayName("r2"))
  static let r3 = Peer(id: PeerID(hex: "00000000000000000000000000000203")!, name: try! DisplayName("r3"))
  let a = Fixture.aliceID
  let c = Fixture.carolID

  func federation(carolAt: Peer? = r3, limit: Duration = .seconds(3600)) -> SimulatedFederation {
    var fed = SimulatedFederation(limit: limit)
    fed.addRelay(Self.r1, site: "site1")
    fed.addRelay(Self.r2, site: "site2")
    fed.addRelay(Self.r3, site: "site3")
    fed.addPeer(Fixture.alice)
    fed.addPeer(Fixture.carol)
    fed.net.discoverAll()
    fed.connect(a, to: Self.r1.id)
    if let carolAt { fed.connect(c, to: carolAt.id) }
    fed.run()
    return fed
  }

  func messages(_ events: [SessionEvent]) -> [ReceivedMessage] {
    events.compactMap { if case .message(let message) = $0 { message } else { nil } }
  }

  func send(_ fed: inout SimulatedFederation, from sender: PeerID, _ text: String, to recipients: Recipients) -> MessageID {
    fed.net.act(sender) { m, x, now in m.send(Array(text.utf8), to: recipients, timestamp: 1, now: now, into: &x) }
  }

  @Test func peersAtTwoSitesFindEachOtherThroughRostersAndChatBothWaysWithDelivery() {
    var fed = federation()
    #expect(fed.net.take(a).contains(.reachable(Fixture.carol, via: Self.r1)))
    #expect(fed.net.take(c).contains(.reachable(Fixture.alice, via: Self.r3)))
    #expect(fed.net.nodes[a]!.site(of: c) == PeerSite(name: "site3", isOnline: true))
    #expect(fed.net.nodes[c]!.site(of: a) == PeerSite(name: "site1", isOnline: true))

    let privately = send(&fed, from: a, "for carol only", to: .peers([c]))
    fed.run()
    let got = messages(fed.net.take(c))
    #expect(got.map(\.body) == [Array("for carol only".utf8)])
    #expect(got.first?.isPrivate == true && got.first?.from == Fixture.alice)
    #expect(fed.net.take(a) == [.delivered(messageID: privately, to: Fixture.carol)])

    let toAll = send(&fed, from: c, "hello everyone", to: .all)
    fed.run()
    let back = messages(fed.net.take(a))
    #expect(back.map(\.body) == [Array("hello everyone".utf8)])
    #expect(back.first?.isPrivate == false)
    #expect(fed.net.take(c) == [.delivered(messageID: toAll, to: Fixture.alice)])

    // What crossed the federation is sealed and signed: no text, and the receipts are signed.
    for (_, frame) in fed.published {
      switch frame {
      case .message(let message):
        #expect(!message.body.elementsEqual(Array("for carol only".utf8)) && !message.body.elementsEqual(Array("hello everyone".utf8)))
      case .delivered(let receipt): #expect(receipt.signature?.count == 64)
      default: Issue.record("unexpected \(frame)")
      }
    }
    #expect(fed.store.isEmpty, "everything was acknowledged")
  }

  @Test func rostersCarrySitesOnlyToPeersThatUnderstandThem() {
    var fed = SimulatedFederation()
    fed.addRelay(Self.r1, site: "site1")
    fed.addRelay(Self.r3, site: "site3")
    fed.addPeer(Fixture.alice)
    fed.addPeer(Fixture.bob, federationAware: false)
    fed.addPeer(Fixture.carol)
    fed.net.discoverAll()
    fed.connect(a, to: Self.r1.id)
    fed.connect(Fixture.bobID, to: Self.r1.id)
    fed.connect(c, to: Self.r3.id)
    fed.run()
    let sent = fed.net.framesSent.filter { $0.key.node == Self.r1.id }
    func rosters(to peer: PeerID) -> [Frame.Roster] {
      let link = fed.net.links.first { $0.key.node == Self.r1.id && $0.value.node == peer }!.key
      return (sent[link] ?? []).compactMap { if case .roster(let roster) = $0 { roster } else { nil } }
    }
    #expect(!rosters(to: a).isEmpty && rosters(to: a).allSatisfy(\.carriesSites))
    #expect(!rosters(to: Fixture.bobID).isEmpty && rosters(to: Fixture.bobID).allSatisfy { !$0.carriesSites })
    // bob still reaches carol (he just does not learn her site).
    #expect(fed.net.nodes[Fixture.bobID]!.site(of: c) == nil)
    #expect(fed.net.take(Fixture.bobID).contains(.reachable(Fixture.carol, via: Self.r1)))
  }

  @Test func messagesForAnOfflinePeerAreQueuedAndDeliveredOnceInOrderWhenItConnectsAtAnotherSite() {
    var fed = federation()
    fed.net.act(c) { m, x, now in m.leave(Self.r3.id, now: now, into: &x) }
    fed.run()
    #expect(fed.net.take(a).contains(.unreachable(Fixture.carol)), "offline: not reachable for live traffic")
    #expect(fed.net.nodes[a]!.site(of: c) == PeerSite(name: "site3", isOnline: false))
    // A message to everyone is for those online; private ones wait.
    #expect(fed.net.nodes[a]!.expectedRecipients(.all).isEmpty)
    var ids: [MessageID] = []
    for n in 1...10 { ids.append(send(&fed, from: a, "message \(n)", to: .peers([c]))) }
    fed.run()
    let queued = fed.net.take(a)
    #expect(queued == ids.map { .queued(messageID: $0, to: Fixture.carol) })
    // Stored by the relays: alice keeps no copy to send again (it would hold her back).
    #expect(fed.net.nodes[a]!.relayCopiesKept == 0)

    fed.connect(c, to: Self.r2.id)
    fed.run()
    let got = messages(fed.net.take(c))
    #expect(got.map { String(decoding: $0.body, as: UTF8.self) } == (1...10).map { "message \($0)" })
    let delivered = fed.net.take(a).compactMap { event -> MessageID? in
      if case .delivered(let id, let peer) = event, peer.id == Fixture.carolID { id } else { nil }
    }
    #expect(delivered == ids)
    #expect(fed.store.isEmpty)
  }

  @Test func aRelayThatRestartsLosesNothingAndShowsNoDuplicate() {
    var fed = federation()
    _ = fed.net.take(c)
    // carol's application is slow: messages reach her, but she takes them only later.
    fed.net.slowApplications.insert(c)
    var ids: [MessageID] = []
    for n in 1...4 { ids.append(send(&fed, from: a, "before \(n)", to: .peers([c]))) }
    fed.run()
    #expect(messages(fed.net.take(c)).count == 4)
    // r3 is SIGKILLed and restarted: its sockets are gone and what it knew with them.
    fed.addRelay(Self.r3, site: "site3")
    fed.net.take(messagesAt: c)  // taken now: their connection is gone, so no receipt yet
    for n in 5...6 { ids.append(send(&fed, from: a, "while down \(n)", to: .peers([c]))) }
    fed.run()
    // carol notices (no heartbeat from r3) and invites it again.
    fed.net.slowApplications.remove(c)
    fed.advance(by: .seconds(20))
    #expect(fed.net.nodes[c]!.isConnected(Self.r3.id), "carol is connected to r3 again")
    let shown = messages(fed.net.take(c)).map { String(decoding: $0.body, as: UTF8.self) }
    #expect(shown == ["while down 5", "while down 6"], "the four taken before were not shown again")
    let delivered = fed.net.take(a).compactMap { event -> MessageID? in
      if case .delivered(let id, _) = event { id } else { nil }
    }
    #expect(delivered.sorted() == ids.sorted(), "one delivered each, the first four thanks to receipts sent again")
    #expect(fed.store.isEmpty)
  }

  @Test func aMessageNobodyCollectsExpiresAndItsSenderIsTold() {
    var fed = federation(carolAt: nil, limit: .seconds(10))
    // carol was known at site3 once.
    fed.connect(c, to: Self.r3.id)
    fed.run()
    fed.net.act(c) { m, x, now in m.leave(Self.r3.id, now: now, into: &x) }
    fed.run()
    _ = fed.net.take(a)
    let id = send(&fed, from: a, "are you there?", to: .peers([c]))
    fed.run()
    #expect(fed.net.take(a) == [.queued(messageID: id, to: Fixture.carol)])
    fed.advance(by: .seconds(11))
    let events = fed.net.take(a)
    #expect(
      events.contains {
        if case .error(.undelivered(id, _, Fixture.carolID, .remote(.expired))) = $0 { true } else { false }
      }, "\(events)")
  }

  @Test func whenTheStoreRefusesTheSenderHearsStoreFailed() {
    var fed = federation()
    _ = fed.net.take(a)
    fed.isDown = true
    let id = send(&fed, from: a, "hello", to: .peers([c]))
    fed.run()
    let events = fed.net.take(a)
    #expect(
      events.contains {
        if case .error(.undelivered(id, _, Fixture.carolID, .remote(.storeFailed))) = $0 { true } else { false }
      }, "\(events)")
  }

  @Test func presenceWhoseKeyDoesNotOwnItsIdIsRefused() {
    var fed = federation()
    _ = fed.net.take(a)
    let mallory = Peer(id: PeerID(hex: "000000000000000000000000000000ee")!, name: try! DisplayName("mallory"))
    let refused = fed.net.act(Self.r1.id) { m, x, t in
      m.federationPeerUpdated(
        mallory, publicKey: SimulatedNetwork.key(of: Fixture.bobID), site: PeerSite(name: "site9", isOnline: true), now: t, into: &x)
    }
    fed.run()
    #expect(refused == .refused)
    #expect(fed.net.nodes[Self.r1.id]!.relayStatistics.forgeriesDropped == 1)
    #expect(!fed.net.take(a).contains { $0.kind == "reachable" })
  }

  /// A site that writes presence for more peers than a relay may know: the relay takes them
  /// up to half of its limit (the other half is its relay connections') and refuses the rest
  /// (its rosters then stay within what its peers take); a peer it took is still updated.
  @Test func presenceBeyondThePeersARelayMayKnowIsRefused() {
    var net = SimulatedNetwork()
    let relay = Peer(id: PeerID(hex: "000000000000000000000000000000f1")!, name: try! DisplayName("r1"))
    net.add(relay, policy: .all) {
      $0.capabilities = [.relay, .federation]
      $0.federation = FederationSettings(site: "hq")
      $0.rosterLimits.peers = 8
    }
    let site = PeerSite(name: "site9", isOnline: true)
    let peers = (1...20).map { Peer(id: PeerID(high: 0x5150, low: UInt64($0)), name: try! DisplayName("p\($0)")) }
    let taken = peers.map { peer in
      net.act(relay.id) { m, x, t in m.federationPeerUpdated(peer, publicKey: SimulatedNetwork.key(of: peer.id), site: site, now: t, into: &x) }
    }
    #expect(taken.filter { $0 == .taken }.count == 4, "\(taken)")
    #expect(taken.prefix(4).allSatisfy { $0 == .taken } && taken.suffix(16).allSatisfy { $0 == .full })
    let again = net.act(relay.id) { m, x, t in
      m.federationPeerUpdated(
        peers[0], publicKey: SimulatedNetwork.key(of: peers[0].id), site: PeerSite(name: "site9", isOnline: false), now: t, into: &x)
    }
    #expect(again == .taken, "a peer already known is updated at the limit")
  }

  @Test func aForgedMessageFromTheStoreIsRejectedAndNotDelivered() {
    var fed = federation()
    _ = fed.net.take(c)
    let header = EnvelopeHeader(origin: a, messageID: 77, timestamp: 1, recipients: [c])
    var envelope = try! SimulatedEndToEnd(local: a).seal(
      Array("hi".utf8), header: header, toEveryone: false, recipientKeys: [SimulatedNetwork.key(of: c)]
    ).get()
    envelope[3] ^= 1
    let forged = Frame.Message(id: 77, sender: a, timestamp: 1, recipients: [c], body: envelope)
    let result = fed.net.act(Self.r3.id) { m, x, _ in m.federationReceived(.message(forged), for: c, into: &x) }
    fed.run()
    guard case .rejected = result else {
      Issue.record("\(result)")
      return
    }
    #expect(messages(fed.net.take(c)).isEmpty)
  }

  /// A relay's view of a sender can lag (the sender's site missed refreshing its presence
  /// while its relay moved to another NATS server): the receipt still goes back. It used to
  /// be dropped, and the sender waited for DELIVERED for ever though the message arrived.
  @Test func aReceiptGoesBackToASenderThatTheRecipientsRelayThinksOffline() throws {
    var fed = federation()
    _ = fed.net.take(a)
    _ = fed.net.take(c)
    fed.net.act(Self.r3.id) { m, x, t in
      m.federationPeerUpdated(Fixture.alice, publicKey: SimulatedNetwork.key(of: a), site: PeerSite(name: "site1", isOnline: false), now: t, into: &x)
    }
    fed.run()
    #expect(fed.net.nodes[c]!.site(of: a)?.isOnline == false)
    _ = fed.net.take(c)
    let id = send(&fed, from: a, "while r3 thinks alice is gone", to: .peers([c]))
    fed.run()
    #expect(messages(fed.net.take(c)).map(\.body) == [Array("while r3 thinks alice is gone".utf8)])
    #expect(fed.net.take(a) == [.delivered(messageID: id, to: Fixture.carol)])

    // A hostile carol makes up receipts for that origin, for messages r3 never handed her:
    // not published (the store would keep them, and fill up).
    let published = fed.published.count
    let carolToR3 = try #require(fed.net.nodes[c]!.connectionIDs.first)
    let madeUp = (1...50).map { UInt64(1_000_000 + $0) }
    fed.net.perform(
      madeUp.map { .send(carolToR3, .delivered(Frame.Delivered(origin: a, recipient: c, ids: [$0], signature: [UInt8](repeating: 1, count: 64)))) },
      at: c)
    // Nor one that mixes a real id with made-up ones.
    fed.net.perform(
      [
        .send(
          carolToR3, .delivered(Frame.Delivered(origin: a, recipient: c, ids: [id.rawValue] + madeUp, signature: [UInt8](repeating: 1, count: 64))))
      ],
      at: c)
    fed.run()
    #expect(fed.published.count == published, "published: \(fed.published.suffix(fed.published.count - published).map(\.frame))")
  }

  @Test func aSiteThatGoesAwayTakesItsPeersOffline() {
    var fed = federation()
    _ = fed.net.take(a)
    // r3's presence lapses (its site lost the federation): the others mark carol offline.
    fed.net.act(Self.r1.id) { m, x, t in
      m.federationPeerUpdated(Fixture.carol, publicKey: SimulatedNetwork.key(of: c), site: PeerSite(name: "site3", isOnline: false), now: t, into: &x)
    }
    fed.run()
    #expect(fed.net.take(a) == [.unreachable(Fixture.carol)])
    #expect(fed.net.nodes[a]!.site(of: c)?.isOnline == false)
  }

  /// Alice's relay is away for a moment while carol goes offline at her site, and alice writes
  /// to carol meanwhile: the message waits for the relay, the resumed relay's roster names
  /// carol offline, and alice reports her unreachable once. The message is stored by the
  /// federation (queued, nothing failed, no copy kept) and delivered when carol connects again.
  @Test func aPeerWaitingBehindARelayThatIsAwayAndThatWentOfflineIsQueuedNotLost() throws {
    var fed = federation()
    _ = fed.net.take(a)
    fed.net.partition(a, Self.r1.id)
    var events: [SessionEvent] = []
    for _ in 0..<80 where !events.contains(.reconnecting(Self.r1, attempt: 1)) {
      fed.advance(by: .milliseconds(100))
      events += fed.net.take(a)
    }
    #expect(events.contains(.reconnecting(Self.r1, attempt: 1)), "\(events)")
    fed.net.act(c) { m, x, now in m.leave(Self.r3.id, now: now, into: &x) }
    fed.run()
    let held = try #require(
      fed.net.act(a) { m, x, now in try? m.sendMessage(Array("while away".utf8), to: .peers([c]), timestamp: 1, now: now, into: &x).id })
    #expect(!events.contains(.unreachable(Fixture.carol)), "stranded behind r1, not unreachable yet: \(events)")
    fed.net.heal(a, Self.r1.id)
    for _ in 0..<300 where !events.contains(.reconnected(Self.r1)) {
      fed.advance(by: .milliseconds(100))
      events += fed.net.take(a)
    }
    fed.advance(by: .seconds(3))
    events += fed.net.take(a)
    #expect(events.contains(.reconnected(Self.r1)), "\(events)")
    #expect(fed.net.nodes[a]!.site(of: c) == PeerSite(name: "site3", isOnline: false))
    #expect(events.filter { $0.kind == "unreachable" } == [.unreachable(Fixture.carol)], "reported once: \(events)")
    #expect(!events.contains { $0.kind == "reachable" }, "\(events)")
    #expect(events.contains(.queued(messageID: held, to: Fixture.carol)), "\(events)")
    #expect(ReconnectTests.failures(events).isEmpty, "\(events)")
    #expect(fed.net.nodes[a]!.relayCopiesKept == 0, "stored by the federation: alice keeps no copy")
    fed.connect(c, to: Self.r2.id)
    fed.run()
    #expect(messages(fed.net.take(c)).map { String(decoding: $0.body, as: UTF8.self) } == ["while away"])
    #expect(fed.net.take(a).contains(.delivered(messageID: held, to: Fixture.carol)))
  }
}
