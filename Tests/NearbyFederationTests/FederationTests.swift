import Nearby
import NearbyCore
import NearbyFederation
import NearbyLab
import NearbyTestSupport
import Testing

/// Relays of different sites federated through real nats-server processes (inside the
/// harness's private namespace, on loopback), with real sessions: the relays never connect
/// to each other, only NATS joins them.
@Suite("Federated relays through NATS (real sessions, real nats-server)", .serialized, .enabled(if: NATSFixture.available, NATSFixture.reason))
struct FederationTests {
  @Test func peersAtTwoSitesFindEachOtherAndChatBothWaysAndPrivatelyWithDelivery() async throws {
    try await NATSFixture.withServers(1) { nats in
      let urls = nats.plan.clientURLs
      let r1 = try await SiteSession.relay("r1", site: "site1", servers: urls)
      let r3 = try await SiteSession.relay("r3", site: "site3", servers: urls)
      let alice = try await SiteSession.peer("alice")
      let carol = try await SiteSession.peer("carol")
      try await alice.join(r1)
      try await carol.join(r3)
      _ = try await alice.expect("carol reachable") { if case .reachable(let p, let via) = $0, p.id == carol.peer.id { via } else { nil } }
      _ = try await carol.expect("alice reachable") { if case .reachable(let p, _) = $0, p.id == alice.peer.id { true } else { nil } }
      #expect(await alice.session.site(of: carol.peer.id) == PeerSite(name: "site3", isOnline: true))

      let privately = try await alice.session.send(Array("hi carol, just you".utf8), to: .peers([carol.peer.id]))
      let got = try await carol.message("alice's private message", from: alice.peer.id)
      #expect(got.body == Array("hi carol, just you".utf8) && got.isPrivate)
      _ = try await alice.expect("delivered to carol") { if case .delivered(privately, let p) = $0, p.id == carol.peer.id { true } else { nil } }

      let toAll = try await carol.session.send(Array("hello site1".utf8), to: .all)
      let back = try await alice.message("carol's message to all", from: carol.peer.id)
      #expect(back.body == Array("hello site1".utf8) && !back.isPrivate)
      _ = try await carol.expect("delivered to alice") { if case .delivered(toAll, let p) = $0, p.id == alice.peer.id { true } else { nil } }

      let stats = try #require(await r1.federation?.currentStatistics())
      #expect(stats.published >= 1 && stats.delivered >= 1 && stats.isConnected)
      for session in [alice, carol, r1, r3] { try await session.stop() }
    }
  }

  @Test func messagesForAnOfflinePeerAreDeliveredOnceInOrderWhenItConnectsAtAnotherSite() async throws {
    try await NATSFixture.withServers(1) { nats in
      let urls = nats.plan.clientURLs
      let r1 = try await SiteSession.relay("r1", site: "site1", servers: urls)
      let r2 = try await SiteSession.relay("r2", site: "site2", servers: urls)
      let r3 = try await SiteSession.relay("r3", site: "site3", servers: urls)
      let alice = try await SiteSession.peer("alice")
      let carolIdentity = PeerIdentity.ephemeral()
      let carol = try await SiteSession.peer("carol", identity: carolIdentity)
      try await alice.join(r1)
      try await carol.join(r3)
      _ = try await alice.expect("carol reachable") { if case .reachable(let p, _) = $0, p.id == carol.peer.id { true } else { nil } }
      try await carol.stop()
      _ = try await alice.expect("carol unreachable") { if case .unreachable(let p) = $0, p.id == carol.peer.id { true } else { nil } }
      #expect(await alice.session.site(of: carol.peer.id) == PeerSite(name: "site3", isOnline: false))

      var ids: [MessageID] = []
      for n in 1...10 { ids.append(try await alice.session.send(Array("message \(n)".utf8), to: .peers([carol.peer.id]))) }
      for id in ids {
        _ = try await alice.expect("queued \(id)") { if case .queued(id, let p) = $0, p.id == carol.peer.id { true } else { nil } }
      }
      // carol comes back at another site.
      let again = try await SiteSession.peer("carol", identity: carolIdentity)
      try await again.join(r2)
      var texts: [String] = []
      for _ in 1...10 { texts.append(String(decoding: try await again.message("a queued message", from: alice.peer.id).body, as: UTF8.self)) }
      #expect(texts == (1...10).map { "message \($0)" })
      for id in ids {
        _ = try await alice.expect("delivered \(id)") { if case .delivered(id, let p) = $0, p.id == carol.peer.id { true } else { nil } }
      }
      // Nothing more: once each.
      try await Task.sleep(for: .seconds(1))
      #expect(again.events.all.filter { if case .message = $0 { true } else { false } }.isEmpty)
      for session in [alice, again, r1, r2, r3] { try await session.stop() }
    }
  }

  /// Anyone holding the NATS credentials can store messages for a peer from origins no
  /// presence names: they were delivered again every 2 s for ever, and 1 024 of them filled
  /// the peer's consumer. Now they are dropped once they have waited
  /// `unknownOriginGiveUp`; a real message still arrives.
  @Test func storedMessagesFromOriginsNobodyKnowsAreDroppedAfterAWhile() async throws {
    try await NATSFixture.withServers(1) { nats in
      let urls = nats.plan.clientURLs
      let r1 = try await SiteSession.relay("r1", site: "site1", servers: urls) { $0.unknownOriginGiveUp = .seconds(4) }
      let r3 = try await SiteSession.relay("r3", site: "site3", servers: urls)
      let alice = try await SiteSession.peer("alice")
      let carol = try await SiteSession.peer("carol")
      try await alice.join(r1)
      try await carol.join(r3)
      _ = try await carol.expect("alice reachable") { if case .reachable(let p, _) = $0, p.id == alice.peer.id { true } else { nil } }
      let work = NATSWorkQueue(label: "mallory")
      let mallory = try await work.run { () throws(NATSError) in
        try NATSConnection.connect(NATSSettings(servers: urls, name: "mallory"), onEvent: { _ in })
      }
      defer { mallory.close() }
      let subject = FederationConfiguration(nats: NATSSettings(servers: urls, name: "x"), site: "x").subject(for: alice.peer.id)
      let junk = (0..<20).map { n in
        FrameEncoder.encode(
          .message(Frame.Message(id: UInt64(n), sender: PeerID.random(), timestamp: 0, recipients: [alice.peer.id], body: [1, 2, 3])))
      }
      try await work.run { () throws(NATSError) in for frame in junk { try mallory.publish(subject, frame) } }
      let federation = try #require(r1.federation)
      let deadline = ContinuousClock.now + .seconds(30)
      while await federation.currentStatistics().rejected < 20, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(200)) }
      #expect(await federation.currentStatistics().rejected >= 20, "the 20 stored messages of unknown origins were dropped")
      let id = try await carol.session.send(Array("still here".utf8), to: .peers([alice.peer.id]))
      let got = try await alice.message("carol's message", from: carol.peer.id)
      #expect(got.body == Array("still here".utf8))
      _ = try await carol.expect("delivered") { if case .delivered(id, _) = $0 { true } else { nil } }
      for session in [alice, carol, r1, r3] { try await session.stop() }
    }
  }

  @Test func whenTheNATSServerARelayUsesIsKilledMessagingContinues() async throws {
    try await NATSFixture.withServers(3) { nats in
      let urls = nats.plan.clientURLs
      let r1 = try await SiteSession.relay("r1", site: "site1", servers: urls)
      let r3 = try await SiteSession.relay("r3", site: "site3", servers: Array(urls.reversed()))
      let alice = try await SiteSession.peer("alice")
      let carol = try await SiteSession.peer("carol")
      try await alice.join(r1)
      try await carol.join(r3)
      _ = try await alice.expect("carol reachable") { if case .reachable(let p, _) = $0, p.id == carol.peer.id { true } else { nil } }
      let before = try await alice.session.send(Array("before".utf8), to: .peers([carol.peer.id]))
      _ = try await alice.expect("delivered before") { if case .delivered(before, _) = $0 { true } else { nil } }

      let server = try #require(await r1.federation?.currentStatistics().server)
      let index = try #require(urls.firstIndex { server.hasSuffix(":" + ($0.split(separator: ":").last ?? "")) })
      await nats.kill(index)
      _ = try await r1.federationEvents!.next(within: .seconds(20), "r1 reconnected") { if case .nats(.reconnected) = $0 { true } else { nil } }
      let after = try await alice.session.send(Array("after".utf8), to: .peers([carol.peer.id]))
      let got = try await carol.expect("after", within: .seconds(30)) {
        if case .message(let m) = $0, m.body == Array("after".utf8) { m } else { nil }
      }
      #expect(got.from.id == alice.peer.id)
      _ = try await alice.expect("delivered after", within: .seconds(30)) { if case .delivered(after, _) = $0 { true } else { nil } }
      for session in [alice, carol, r1, r3] { try await session.stop() }
    }
  }
}
