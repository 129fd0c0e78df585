import NearbyCore
import Testing

@Suite("Session state machine (simulated network, virtual clock)")
struct SessionStateMachineTests {
  let a = Fixture.aliceID
  let b = Fixture.bobID
  let c = Fixture.carolID

  func pair(policy: AcceptPolicy = .ask) -> SimulatedNetwork {
    var net = SimulatedNetwork()
    net.add(Fixture.alice, policy: policy)
    net.add(Fixture.bob, policy: policy)
    net.discoverAll()
    _ = net.take(a)
    _ = net.take(b)
    return net
  }

  func firstInvitation(in events: [SessionEvent]) -> Invitation? {
    for case .invitation(let invitation) in events { return invitation }
    return nil
  }

  @Test func discoveryReportsFoundOnceAndUpdates() {
    var net = SimulatedNetwork()
    net.add(Fixture.alice)
    net.add(Fixture.bob)
    net.discoverAll()
    #expect(net.take(a).map(\.kind) == ["found"])
    net.discoverAll()
    #expect(net.take(a).map(\.kind) == ["updated"])
    net.act(a) { machine, actions, _ in machine.lost(Fixture.bobID, into: &actions) }
    #expect(net.take(a).map(\.kind) == ["lost"])
    net.act(a) { machine, actions, _ in machine.lost(Fixture.bobID, into: &actions) }
    #expect(net.take(a).isEmpty)
  }

  @Test func inviteAcceptAndExchangeMessages() throws {
    var net = pair()
    net.act(a) { m, x, now in m.invite(Fixture.bobID, context: Array("lunch?".utf8), now: now, into: &x) }
    #expect(net.take(a).map(\.kind) == ["connecting"])
    net.run()
    let invitation = try #require(firstInvitation(in: net.take(b)))
    #expect(invitation.peer == Fixture.alice)
    #expect(invitation.context == Array("lunch?".utf8))
    net.act(b) { m, x, now in m.accept(peer: Fixture.aliceID, now: now, into: &x) }
    #expect(net.take(b).map(\.kind) == ["connected"])
    net.run()
    #expect(net.take(a).map(\.kind) == ["connected"])
    #expect(net.connectedNames(a) == ["bob"])
    #expect(net.connectedNames(b) == ["alice"])

    let text = "héllo 👋 日本"
    var id: MessageID = 0
    net.act(a) { m, x, now in id = m.send(Array(text.utf8), to: .all, timestamp: 1, now: now, into: &x) }
    net.run()
    let received = net.take(b)
    guard case .message(let message)? = received.first else {
      Issue.record("no message: \(received)")
      return
    }
    #expect(String(decoding: message.body, as: UTF8.self) == text)
    #expect(message.from == Fixture.alice)
    #expect(message.id == id)
    #expect(!message.isPrivate)
    #expect(net.take(a) == [.delivered(messageID: id, to: Fixture.bob)])
    #expect(net.nodes[a]!.unacknowledgedCount(net.nodes[a]!.sessionConnection(b)!) == 0)

    net.act(b) { m, x, now in id = m.send(Array("hi".utf8), to: .peers([Fixture.aliceID]), timestamp: 2, now: now, into: &x) }
    net.run()
    guard case .message(let reply)? = net.take(a).first else {
      Issue.record("no reply")
      return
    }
    #expect(reply.isPrivate)
    #expect(net.take(b) == [.delivered(messageID: id, to: Fixture.alice)])
  }

  @Test func aSilentPeerIsReportedWithinFiveSeconds() {
    var net = pair(policy: .all)
    net.act(a) { m, x, now in m.invite(Fixture.bobID, context: [], now: now, into: &x) }
    net.run()
    _ = net.take(a)
    net.advance(by: .seconds(10))  // heartbeats keep it alive
    #expect(net.take(a).isEmpty)
    #expect(net.connectedNames(a) == ["bob"])
    // Pull the cable: nothing from bob arrives any more.
    net.silenced.insert(SimulatedNetwork.Link(node: b, connection: net.nodes[b]!.sessionConnection(a)!))
    let cut = net.now
    var reportedAt: Duration?
    while net.now < cut + .seconds(6), reportedAt == nil {
      net.advance(by: .milliseconds(100))
      // The session waits to resume (ReconnectTests): the peer is reported reconnecting.
      if net.take(a).contains(where: { $0.kind == "reconnecting" }) { reportedAt = net.now }
    }
    let delay = try! #require(reportedAt) - cut
    #expect(delay <= .seconds(5))
    #expect(delay >= .seconds(3))
  }

  @Test func gracefulLeaveIsReportedAtOnceWithItsReason() {
    var net = pair(policy: .all)
    net.act(a) { m, x, now in m.invite(Fixture.bobID, context: [], now: now, into: &x) }
    net.run()
    _ = net.take(a)
    _ = net.take(b)
    net.act(a) { m, x, now in m.leave(Fixture.bobID, now: now, into: &x) }
    #expect(net.take(a) == [.disconnected(Fixture.bob, .local(.leaving))])
    net.run()
    #expect(net.take(b) == [.disconnected(Fixture.alice, .goodbye(.leaving))])
    #expect(net.openLinks(a) == 0)
    #expect(net.openLinks(b) == 0)
  }

  @Test func undeliverableMessagesAreReportedByID() {
    var net = pair(policy: .all)
    net.act(a) { m, x, now in m.send([1], to: .peers([Fixture.bobID]), timestamp: 0, now: now, into: &x) }
    #expect(net.take(a) == [.error(.rejected(SendError.notConnected([Fixture.bobID]).description))])

    net.act(a) { m, x, now in m.invite(Fixture.bobID, context: [], now: now, into: &x) }
    net.run()
    _ = net.take(a)
    // Bob's acknowledgements never arrive: the messages are unconfirmed when the link dies.
    net.silenced.insert(SimulatedNetwork.Link(node: b, connection: net.nodes[b]!.sessionConnection(a)!))
    net.unreachable.insert(b)  // and alice cannot reconnect
    var ids: [MessageID] = []
    for _ in 0..<3 { net.act(a) { m, x, now in ids.append(m.send([2], to: .all, timestamp: 0, now: now, into: &x)) } }
    net.run()
    // They fail when the session gives up resuming: after the grace period.
    net.advance(by: .seconds(35))
    let failures = net.take(a).compactMap { event -> MessageID? in
      if case .error(.undelivered(let messageID, _, _, .connectionClosed)) = event { return messageID }
      return nil
    }
    #expect(failures == ids)
    // The ledger settled each: one recipient, no delivery, the connection's failure.
    let reports = net.settled[a] ?? []
    #expect(reports.map(\.messageID) == ids)
    #expect(reports.allSatisfy { $0.isComplete && $0.recipients == 1 && $0.delivered == 0 && $0.failures.count == 1 })
  }

  /// Whom a message went to is fixed when it is sent, and kept until all have answered: the
  /// chat showed "sent to" from a separate question asked before the send, and a soak saw a
  /// message shown as sent to a peer that quit in between, with no answer from it ever.
  @Test func aMessageNamesEveryPeerItWasSentToUntilEachAnswered() {
    var net = SimulatedNetwork()
    for fixture in [Fixture.alice, Fixture.bob, Fixture.carol] { net.add(fixture, policy: .all) }
    net.discoverAll()
    net.act(a) { m, x, now in m.invite(Fixture.bobID, context: [], now: now, into: &x) }
    net.run()
    _ = net.take(a)
    // To everyone while only bob is connected; to bob and carol, who is not: she fails at once.
    let toAll = net.act(a) { m, x, now in m.send([1], to: .all, timestamp: 0, now: now, into: &x) }
    let toBoth = net.act(a) { m, x, now in m.send([2], to: .peers([Fixture.bobID, Fixture.carolID]), timestamp: 0, now: now, into: &x) }
    let direct = net.act(a) { m, x, now -> MessageID in
      let route = m.directRoute(.peers([Fixture.bobID]))!
      let (id, message) = m.sendMessage([3], direct: route, timestamp: 0, now: now)
      x.append(.sendMessage(message, [route.connection]))
      return id
    }
    var named: [MessageID: [PeerID]] = [:]
    for id in [toAll, toBoth, direct] { named[id] = net.nodes[a]!.recipients(of: id)?.map(\.id) }
    #expect(named == [toAll: [b], toBoth: [b, c], direct: [b]])
    #expect(net.nodes[a]!.recipients(of: toAll)?.first?.name == Fixture.bob.name)
    #expect(net.nodes[a]!.recipients(of: MessageID(rawValue: 999)) == nil, "not ours")
    // bob's answers never come; carol connects meanwhile: the names stay as sent.
    net.silenced.insert(SimulatedNetwork.Link(node: b, connection: net.nodes[b]!.sessionConnection(a)!))
    net.unreachable.insert(b)  // and alice cannot reconnect
    net.act(a) { m, x, now in m.invite(Fixture.carolID, context: [], now: now, into: &x) }
    net.run()
    #expect(net.nodes[a]!.sessionConnection(c) != nil)
    #expect(net.nodes[a]!.recipients(of: toAll)?.map(\.id) == [b], "carol came after it was sent")
    // bob's session is given up: his answers are failures.
    net.advance(by: .seconds(35))
    // Each named peer answered once (bob's went undelivered); then the names are let go.
    for id in [toAll, toBoth, direct] {
      let report = net.nodes[a]!.deliveryReport(id)
      #expect(report?.isComplete == true && report?.recipients == named[id]?.count, "\(id): \(String(describing: report))")
      #expect(report?.failures.map(\.peerID).sorted() == named[id]?.sorted())
      #expect(net.nodes[a]!.recipients(of: id) == nil, "all answered")
    }
  }

  /// One peer over its own session goes by the direct route (no routing is built): the same
  /// message on the wire, the same acknowledgement, event and report as through a routing.
  @Test func theDirectRouteSendsWhatARoutingWould() throws {
    func connected() -> SimulatedNetwork {
      var net = pair(policy: .all)
      net.act(a) { m, x, now in m.invite(Fixture.bobID, context: [], now: now, into: &x) }
      net.run()
      _ = net.take(a)
      _ = net.take(b)
      return net
    }
    var routed = connected()
    var direct = connected()
    var sentRouted: [SessionAction] = []
    let routedID = routed.act(a) { m, x, now in
      let id = try! m.sendMessage([9, 8], to: .peers([Fixture.bobID]), timestamp: 5, now: now, into: &x).id
      sentRouted = x
      return id
    }
    var sentDirect: Frame.Message?
    let directID = direct.act(a) { m, x, now in
      let route = m.directRoute(.peers([Fixture.bobID]))!
      #expect(route.peer == Fixture.bobID && route.connection == m.sessionConnection(Fixture.bobID))
      let (id, message) = m.sendMessage([9, 8], direct: route, timestamp: 5, now: now)
      sentDirect = message
      x.append(.sendMessage(message, [route.connection]))
      return id
    }
    #expect(routedID == directID)
    guard case .sendMessage(let routedMessage, _) = try #require(sentRouted.first), sentRouted.count == 1 else {
      Issue.record("a routing to one peer: one MESSAGE, got \(sentRouted)")
      return
    }
    #expect(sentDirect == routedMessage)
    #expect(direct.nodes[a]!.hasPendingDeliveries && routed.nodes[a]!.hasPendingDeliveries)
    routed.run()
    direct.run()
    #expect(direct.take(b) == routed.take(b))
    #expect(direct.take(a) == [.delivered(messageID: directID, to: Fixture.bob)])
    #expect(routed.take(a) == [.delivered(messageID: routedID, to: Fixture.bob)])
    #expect(!direct.nodes[a]!.hasPendingDeliveries)
    #expect(direct.nodes[a]!.deliveryReport(directID) == routed.nodes[a]!.deliveryReport(routedID))
  }

  /// The direct route is for one peer with a session of its own; everything else is routed.
  @Test func theDirectRouteIsOnlyForOnePeerWithASessionOfItsOwn() {
    var net = SimulatedNetwork()
    net.add(Fixture.alice, policy: .all)
    net.add(Fixture.bob, policy: .all)
    net.add(Fixture.carol, policy: .all)
    net.discoverAll()
    #expect(net.act(a) { m, _, _ in m.directRoute(.peers([Fixture.bobID])) } == nil, "no session yet")
    net.act(a) { m, x, now in m.invite(Fixture.bobID, context: [], now: now, into: &x) }
    net.act(a) { m, x, now in m.invite(Fixture.carolID, context: [], now: now, into: &x) }
    net.run()
    #expect(net.act(a) { m, _, _ in m.directRoute(.peers([Fixture.bobID])) } != nil)
    #expect(net.act(a) { m, _, _ in m.directRoute(.all) } == nil)
    #expect(net.act(a) { m, _, _ in m.directRoute(.peers([Fixture.bobID, Fixture.carolID])) } == nil)
    #expect(net.act(a) { m, _, _ in m.directRoute(.peers([PeerID(high: 9, low: 9)])) } == nil, "unknown peer")
    #expect(net.act(a) { m, _, _ in m.directRoute(.peers([])) } == nil)
  }

  /// Connection ids hash with a cheap mix of their own: sets and dictionaries of many still
  /// find each one, and the hashes of neighbouring ids are spread out.
  @Test func connectionIDsHashApartInSetsAndDictionaries() {
    let ids = (0..<50_000).map { ConnectionID(UInt64($0) * 3 + 1) }
    let set = Set(ids)
    #expect(set.count == ids.count)
    #expect(ids.allSatisfy { set.contains($0) })
    #expect(!set.contains(ConnectionID(3)) && !set.contains(ConnectionID(0)))
    let table = Dictionary(uniqueKeysWithValues: ids.map { ($0, $0.rawValue) })
    #expect(ids.allSatisfy { table[$0] == $0.rawValue })
    // Low bits (what a table's bucket index uses) of consecutive ids: all different.
    let buckets = Set((0..<4096).map { ConnectionID(UInt64($0))._rawHashValue(seed: 12345) & 0xFFFF })
    #expect(buckets.count > 3900, "\(buckets.count) distinct low bits for 4096 consecutive ids")
  }

  /// A message counts as delivered once the receiving application took it, not when it
  /// arrived: the DELIVERED frame waits for the application.
  @Test func deliveryWaitsUntilTheApplicationTakesTheMessage() {
    var net = pair(policy: .all)
    net.act(a) { m, x, now in m.invite(Fixture.bobID, context: [], now: now, into: &x) }
    net.run()
    _ = net.take(a)
    _ = net.take(b)
    net.slowApplications.insert(b)
    let id = net.act(a) { m, x, now in m.send([1], to: .all, timestamp: 0, now: now, into: &x) }
    net.run()
    #expect(net.take(b).map(\.kind) == ["message"])
    #expect(net.take(a).isEmpty, "no delivered before bob's application took the message")
    #expect(net.nodes[a]!.hasPendingDeliveries)
    net.take(messagesAt: b)
    net.run()
    #expect(net.take(a) == [.delivered(messageID: id, to: Fixture.bob)])
    #expect(!net.nodes[a]!.hasPendingDeliveries)
    #expect(net.settled[a]?.last == DeliveryReport(messageID: id, recipients: 1, delivered: 1, failures: []))
  }

  @Test func sixtyFourPeersInOneSession() {
    var net = SimulatedNetwork()
    net.add(Fixture.alice, policy: .all)
    for index in 1...63 { net.add(Fixture.peer(index), policy: .all) }
    net.discoverAll()
    for index in 1...63 { net.act(a) { m, x, now in m.invite(Fixture.peer(index).id, context: [], now: now, into: &x) } }
    net.run()
    #expect(net.nodes[a]!.connectedPeers.count == 63)
    _ = net.take(a)
    net.act(a) { m, x, now in m.send(Array("all".utf8), to: .all, timestamp: 0, now: now, into: &x) }
    net.run()
    #expect(net.take(a).filter { $0.kind == "delivered" }.count == 63)
    for index in 1...63 {
      #expect(net.take(Fixture.peer(index).id).filter { $0.kind == "message" }.count == 1)
    }
  }

  @Test func tooManyHandshakingConnectionsAreRefusedBusy() {
    var session = SessionStateMachine(
      configuration: {
        var configuration = SessionStateMachine.Configuration(local: Fixture.alice)
        configuration.maximumPendingConnections = 3
        return configuration
      }())
    var actions: [SessionAction] = []
    for _ in 0..<4 {
      session.connectionAccepted(session.reserveConnectionID(), now: .zero, into: &actions)
    }
    let errors = actions.compactMap { action -> ErrorCode? in
      if case .send(_, .error(let code, _)) = action { return code }
      return nil
    }
    #expect(errors == [.busy])
  }

  @Test func shutdownSaysGoodbyeEverywhereAndDeclinesPending() {
    var net = SimulatedNetwork()
    net.add(Fixture.alice)
    net.add(Fixture.bob, policy: .all)
    net.add(Fixture.carol)
    net.discoverAll()
    net.act(a) { m, x, now in m.invite(Fixture.bobID, context: [], now: now, into: &x) }
    net.act(c) { m, x, now in m.invite(Fixture.aliceID, context: [], now: now, into: &x) }
    net.run()
    _ = net.take(b)
    _ = net.take(c)
    net.act(a) { m, x, now in m.shutdown(now: now, into: &x) }
    net.run()
    #expect(net.take(b) == [.disconnected(Fixture.alice, .goodbye(.shuttingDown))])
    #expect(net.take(c) == [.declined(Fixture.alice, .shuttingDown)])
    #expect(net.openLinks(a) == 0)
  }
}
