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
