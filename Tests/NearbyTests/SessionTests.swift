import Nearby
import NearbyTestSupport
import Testing

@Suite("Sessions over real TCP on loopback")
struct SessionTests {
  @Test func inviteAcceptAndMessagesBothWaysWithDelivery() async throws {
    let alice = try await RunningSession.start("alice")
    let bob = try await RunningSession.start("bob", policy: .ask)
    await alice.session.invite(endpoints: [bob.endpoint], context: Array("lunch?".utf8))
    let invitation = try await bob.expect("invitation") { if case .invitation(let i) = $0 { i } else { nil } }
    #expect(invitation.peer == alice.peer)
    #expect(invitation.context == Array("lunch?".utf8))
    await bob.session.accept(alice.peer.id)
    _ = try await alice.expect("connected") { if case .connected(let p, _) = $0 { p } else { nil } }
    _ = try await bob.expect("connected") { if case .connected(let p, _) = $0 { p } else { nil } }

    let text = "grüße 👋 — 日本語"
    let id = try await alice.session.send(Array(text.utf8), to: .peers([bob.peer.id]))
    let message = try await bob.expect("message") { if case .message(let m) = $0 { m } else { nil } }
    #expect(String(decoding: message.body, as: UTF8.self) == text)
    #expect(message.from == alice.peer)
    #expect(message.isPrivate)
    #expect(message.id == id)
    let delivered = try await alice.expect("delivered") { if case .delivered(let id, let to) = $0 { (id, to) } else { nil } }
    #expect(delivered.0 == id)
    #expect(delivered.1 == bob.peer)

    let reply = try await bob.session.send(Array("hi alice".utf8))
    let back = try await alice.expect("reply") { if case .message(let m) = $0 { m } else { nil } }
    #expect(back.body == Array("hi alice".utf8))
    #expect(!back.isPrivate)
    _ = try await bob.expect("delivered reply") { if case .delivered(reply, _) = $0 { true } else { nil } }

    try await alice.stop()
    let gone = try await bob.expect("disconnected") { if case .disconnected(let p, let reason) = $0 { (p, reason) } else { nil } }
    #expect(gone.0 == alice.peer)
    #expect(gone.1 == .goodbye(.shuttingDown))
    try await bob.stop()
  }

  @Test func declineAndTimeoutReachTheInviter() async throws {
    let alice = try await RunningSession.start("alice")
    let bob = try await RunningSession.start("bob", policy: .ask)
    await alice.session.invite(endpoints: [bob.endpoint])
    _ = try await bob.expect("invitation") { if case .invitation(let i) = $0 { i } else { nil } }
    await bob.session.decline(alice.peer.id)
    let reason = try await alice.expect("declined") { if case .declined(_, let r) = $0 { r } else { nil } }
    #expect(reason == .declined)

    await alice.session.invite(endpoints: [bob.endpoint], timeout: .milliseconds(500))
    _ = try await bob.expect("second invitation") { if case .invitation(let i) = $0 { i } else { nil } }
    let timeout = try await alice.expect("timeout") { if case .declined(_, let r) = $0 { r } else { nil } }
    #expect(timeout == .timeout)
    _ = try await bob.expect("withdrawn") { if case .invitationWithdrawn = $0 { true } else { nil } }
    #expect(await bob.session.pendingInvitations.isEmpty)
    try await alice.stop()
    try await bob.stop()
  }

  @Test func sendingToNobodyThrowsNamingWhoIsNotConnected() async throws {
    let alice = try await RunningSession.start("alice")
    let bob = try await RunningSession.start("bob")
    await #expect(throws: SendError.notConnected([bob.peer.id])) { try await alice.session.send([1], to: .peer(bob.peer.id)) }
    try await connect(alice, bob)
    try await bob.stop()
    _ = try await alice.expect("disconnected") { if case .disconnected = $0 { true } else { nil } }
    await #expect(throws: SendError.notConnected([])) { try await alice.session.send([2], to: .all) }
    await #expect(throws: SendError.noRecipients) { try await alice.session.send([2], to: .peers([])) }
    let tooLarge = [UInt8](repeating: 0, count: NearbySession.maximumMessageSize + 1)
    await #expect(throws: SendError.bodyTooLarge(byteCount: tooLarge.count, limit: NearbySession.maximumMessageSize)) {
      try await alice.session.send(tooLarge, to: .all)
    }
    try await alice.stop()
    await #expect(throws: SendError.notRunning) { try await alice.session.send([3], to: .all) }
  }

  /// Many callers waiting for delivery reports at once, from tasks on Swift's thread pool
  /// (not the session's executor), while the reports arrive on the loop thread: each gets
  /// its own report. (The waits were once registered on the pool, racing with the loop
  /// taking others out: a chat crashed with "Index out of range"; the session now checks that
  /// every wait is registered on its loop.)
  @Test func manyTasksWaitingForDeliveryReportsAtOnceEachGetTheirOwn() async throws {
    let alice = try await RunningSession.start("alice")
    let bob = try await RunningSession.start("bob")
    try await connect(alice, bob)
    let session = alice.session
    let target = bob.peer.id
    let reports = await withTaskGroup(of: (MessageID, DeliveryReport?).self) { group in
      for index in 0..<400 {
        group.addTask {
          let id = try! await session.send(Array("report \(index)".utf8), to: .peer(target))
          return (id, await session.delivery(of: id))
        }
      }
      var reports: [(MessageID, DeliveryReport?)] = []
      for await report in group { reports.append(report) }
      return reports
    }
    #expect(reports.count == 400)
    for (id, report) in reports {
      #expect(report?.messageID == id && report?.isDelivered == true, "\(id): \(String(describing: report))")
    }
    try await alice.stop()
    try await bob.stop()
  }

  @Test func aMessageToAConnectedAndAnAbsentPeerReachesOneAndReportsTheOther() async throws {
    let alice = try await RunningSession.start("alice")
    let bob = try await RunningSession.start("bob")
    let absent = PeerIdentity.ephemeral().peerID
    try await connect(alice, bob)
    let id = try await alice.session.send([7], to: .peers([bob.peer.id, absent]))
    let failure = try await alice.expect("undelivered") { if case .error(.undelivered(let m, _, let p, let r)) = $0 { (m, p, r) } else { nil } }
    #expect(failure.0 == id && failure.1 == absent && failure.2 == .notConnected)
    _ = try await bob.expect("message") { if case .message(let m) = $0, m.id == id { true } else { nil } }
    let report = try #require(await alice.session.delivery(of: id))
    #expect(report.recipients == 2 && report.delivered == 1 && report.isComplete && !report.isDelivered)
    #expect(report.failures.map(\.peerID) == [absent])
    try await alice.stop()
    try await bob.stop()
  }

  @Test func aPeerThatFallsSilentIsReportedDisconnectedByTheHeartbeat() async throws {
    // Heartbeats: bob stops answering (its event loop is frozen by closing nothing but
    // dropping the connection silently is what a pulled cable does). Simulate with a raw
    // peer that completes the handshake and then goes silent. How long it takes is pinned
    // down by `ConnectionStateMachineTests.deadPeerAfterFourSecondsOfSilence`; here the
    // wall clock only bounds it loosely (a bound of 3 s failed whenever the whole suite ran
    // in parallel: the test's own consumer on the thread pool was starved, not the loop).
    // Silence of 3 s, not less: the silence bound applies once HELLO is in, before the
    // invitation. With 0.8 s, a CI run under full load once saw no `connected` within 10 s
    // (only `listening`); an INVITE written more than 0.8 s after the HELLO, by a starved
    // test thread, would be dropped that way (inferred, not observed).
    var fast = ConnectionTimeouts()
    fast.pingInterval = .milliseconds(500)
    fast.deadPeer = .seconds(3)
    let alice = try await RunningSession.start("alice") { $0.timeouts = fast }
    let silent = try await SilentPeer.connect(to: alice.port)
    _ = try await alice.expect("connected") { if case .connected(let p, _) = $0 { p } else { nil } }
    let started = ContinuousClock.now
    let reason = try await alice.expect("disconnected", within: .seconds(30)) { if case .disconnected(_, let r) = $0 { r } else { nil } }
    guard case .timedOut = reason else {
      Issue.record("unexpected reason \(reason)")
      return
    }
    #expect(ContinuousClock.now - started < .seconds(20))
    _ = silent
    try await alice.stop()
  }

  @Test func mutualInvitationsEndWithOneConnection() async throws {
    let alice = try await RunningSession.start("alice", policy: .ask)
    let bob = try await RunningSession.start("bob", policy: .ask)
    // Each learns the other's id through a first session, then both leave and re-invite at once.
    try await connectAsk(alice, bob)
    await alice.session.leave(bob.peer.id)
    _ = try await bob.expect("left") { if case .disconnected = $0 { true } else { nil } }
    _ = try await alice.expect("left") { if case .disconnected = $0 { true } else { nil } }
    async let first: Void = alice.session.invite(endpoints: [bob.endpoint])
    async let second: Void = bob.session.invite(endpoints: [alice.endpoint])
    _ = await (first, second)
    _ = try await alice.expect("connected again") { if case .connected = $0 { true } else { nil } }
    _ = try await bob.expect("connected again") { if case .connected = $0 { true } else { nil } }
    // Time for a second connection to show up, if one were made.
    try await Task.sleep(for: .milliseconds(300))
    // Whichever order things happened in: one session, no second connection (the one
    // `connected` each side had is consumed above).
    let aliceConnected = alice.events.all.filter { if case .connected = $0 { true } else { false } }.count
    let bobConnected = bob.events.all.filter { if case .connected = $0 { true } else { false } }.count
    #expect(await alice.session.connectedPeers == [bob.peer])
    #expect(await bob.session.connectedPeers == [alice.peer])
    #expect(aliceConnected == 0)
    #expect(bobConnected == 0)
    try await alice.stop()
    try await bob.stop()
  }

  @Test func sixtyFourPeersInOneSession() async throws {
    // All 63 invite at once, and on loopback they are all one source (one host): the
    // per-source limit is raised to let them in together.
    let hub = try await RunningSession.start("hub") { $0.maximumPendingConnectionsPerSource = 64 }
    var peers: [RunningSession] = []
    for index in 0..<63 { peers.append(try await RunningSession.start("peer\(index)")) }
    for peer in peers { await peer.session.invite(endpoints: [hub.endpoint]) }
    for peer in peers {
      _ = try await peer.expect("connected to hub", within: .seconds(20)) { if case .connected = $0 { true } else { nil } }
    }
    #expect(await hub.session.connectedPeers.count == 63)
    let id = try await hub.session.send(Array("to everyone".utf8))
    for peer in peers {
      let message = try await peer.expect("broadcast") { if case .message(let m) = $0 { m } else { nil } }
      #expect(message.id == id)
    }
    var delivered = 0
    while delivered < 63 {
      _ = try await hub.expect("delivered") { if case .delivered(id, _) = $0 { true } else { nil } }
      delivered += 1
    }
    // And every peer can reach the hub.
    for peer in peers { try await peer.session.send(Array("hi \(peer.peer.name)".utf8)) }
    for _ in peers { _ = try await hub.expect("message") { if case .message = $0 { true } else { nil } } }
    for peer in peers { try await peer.stop() }
    try await hub.stop()
  }
}

/// Connects with the ask policy on the invitee.
func connectAsk(_ a: RunningSession, _ b: RunningSession) async throws {
  await a.session.invite(endpoints: [b.endpoint])
  _ = try await b.expect("invitation") { if case .invitation = $0 { true } else { nil } }
  await b.session.accept(a.peer.id)
  _ = try await a.expect("connected") { if case .connected = $0 { true } else { nil } }
  _ = try await b.expect("connected") { if case .connected = $0 { true } else { nil } }
}
