import Nearby
import NearbyTestSupport
import Testing

/// Relay sessions over real TCP that are lost for a moment while messages are on their way
/// through the relay (PROTOCOL.md 6.5): alice sends to carol through the relay, and one of
/// them reaches it through a ``FaultyLink``.
@Suite("Relay sessions resume over real TCP (loopback, a faulty link)")
struct RelayResumeSessionTests {
  /// Short pings, but a dead peer noticed only after 10 s: the ten messages must all be sent
  /// into the partition before a session is suspended, also in a loaded run (with 700 ms and
  /// then 3 s, parallel runs in CI sometimes suspended it after a few: "not connected"); and
  /// handshakes that may take 5 s (with 1 s, a loaded parallel run once lost the first one
  /// through the link).
  static func timeouts(_ configuration: inout SessionConfiguration) {
    ReconnectSessionTests.fast(&configuration)
    configuration.timeouts.deadPeer = .seconds(10)
    configuration.timeouts.handshake = .seconds(5)
    configuration.timeouts.connect = .seconds(5)
  }

  enum Faulty { case alice, carol }

  struct Trio {
    let relay: RunningSession
    let alice: RunningSession
    let carol: RunningSession
    let link: FaultyLink

    func stop() async throws {
      link.stop()
      try await alice.stop()
      try await carol.stop()
      try await relay.stop()
    }
  }

  /// alice and carol each invite the relay; `faulty` reaches it through the link.
  static func trio(
    _ faulty: Faulty, timeouts: @escaping @Sendable (inout SessionConfiguration) -> Void = Self.timeouts
  ) async throws -> Trio {
    let relay = try await RunningSession.start("relay", policy: .all) {
      $0.isRelay = true
      timeouts(&$0)
    }
    let alice = try await RunningSession.start("alice") { timeouts(&$0) }
    let carol = try await RunningSession.start("carol") { timeouts(&$0) }
    let link = try FaultyLink(forwardingTo: relay.port)
    let (linked, direct) = faulty == .alice ? (alice, carol) : (carol, alice)
    await linked.session.invite(endpoints: [Endpoint(host: "127.0.0.1", port: link.port)])
    _ = try await linked.expect("relay connected") { if case .connected(let p, _) = $0, p.id == relay.peer.id { true } else { nil } }
    try await connect(direct, relay)
    let carolID = carol.peer.id
    _ = try await alice.expect("carol reachable") { if case .reachable(let p, _) = $0, p.id == carolID { true } else { nil } }
    return Trio(relay: relay, alice: alice, carol: carol, link: link)
  }

  /// Partitions the link, sends (up to) ten messages from alice to carol into it, waits until
  /// `waiter` saw the loss, heals, and checks that each arrived once and was delivered.
  static func tenMessagesThroughABlip(_ faulty: Faulty) async throws {
    let trio = try await trio(faulty)
    trio.link.set(.partition)
    let carolID = trio.carol.peer.id
    var sent: [String] = []
    var ids: [MessageID] = []
    for text in (1...10).map({ "r\($0)" }) {
      // Should a loaded machine take so long that the loss is noticed meanwhile, carol is
      // unreachable and the rest is refused: what was sent before must still arrive.
      do {
        ids.append(try await trio.alice.session.send(Array(text.utf8), to: .peer(carolID)))
        sent.append(text)
      } catch {
        guard case .notConnected = error else { throw error }
        break
      }
    }
    #expect(!sent.isEmpty, "the first message went into the partition")
    let relayPeer = trio.relay.peer
    let linked = faulty == .alice ? trio.alice : trio.carol
    _ = try await linked.expect("reconnecting", within: .seconds(30)) { if case .reconnecting(relayPeer, _) = $0 { true } else { nil } }
    try await Task.sleep(for: .milliseconds(500))
    trio.link.set(.pass)
    _ = try await linked.expect("reconnected") { if case .reconnected(relayPeer) = $0 { true } else { nil } }
    try await Self.arrivedOnceAndDelivered(trio, sent, ids)
  }

  /// Carol got `texts` once each, in order, and nothing more; alice's `ids` were all
  /// delivered and nothing was reported failed. Then the trio stops.
  static func arrivedOnceAndDelivered(_ trio: Trio, _ texts: [String], _ ids: [MessageID]) async throws {
    #expect(try await ReconnectSessionTests.texts(trio.carol, count: texts.count) == texts)
    for id in ids {
      let report = await trio.alice.session.delivery(of: id)
      #expect(report?.isDelivered == true, "\(id): \(String(describing: report))")
    }
    try await Task.sleep(for: .milliseconds(300))
    #expect(!trio.carol.events.all.contains { if case .message = $0 { true } else { false } }, "nothing twice")
    #expect(!trio.alice.events.all.contains { if case .error(.undelivered) = $0 { true } else { false } }, "nothing reported failed")
    try await trio.stop()
  }

  @Test func messagesOnTheirWayToARelayDuringAPartitionArriveOnceAndAreDelivered() async throws {
    try await Self.tenMessagesThroughABlip(.alice)
  }

  @Test func messagesOnTheirWayFromARelayDuringAPartitionArriveOnceAndAreDelivered() async throws {
    try await Self.tenMessagesThroughABlip(.carol)
  }

  /// Sent after alice noticed that the relay is away: neither refused nor lost, each goes
  /// once the session with the relay resumes (and carol's application gets it once).
  @Test func messagesSentWhileTheRelayIsAwayWaitForItAndArriveOnce() async throws {
    let trio = try await Self.trio(.alice) { configuration in
      ReconnectSessionTests.fast(&configuration)
      configuration.timeouts.handshake = .seconds(5)
      configuration.timeouts.connect = .seconds(5)
    }
    trio.link.set(.partition)
    let relayPeer = trio.relay.peer
    let carolID = trio.carol.peer.id
    _ = try await trio.alice.expect("reconnecting", within: .seconds(30)) { if case .reconnecting(relayPeer, _) = $0 { true } else { nil } }
    #expect(await trio.alice.session.relayedPeers.map(\.peer.id) == [carolID], "carol is still addressable, through the relay")
    var ids: [MessageID] = []
    for text in ["w1", "w2", "w3"] { ids.append(try await trio.alice.session.send(Array(text.utf8), to: .peer(carolID))) }
    ids.append(try await trio.alice.session.send(Array("w4".utf8), to: .all))
    try await Task.sleep(for: .milliseconds(300))
    trio.link.set(.pass)
    _ = try await trio.alice.expect("reconnected") { if case .reconnected(relayPeer) = $0 { true } else { nil } }
    try await Self.arrivedOnceAndDelivered(trio, ["w1", "w2", "w3", "w4"], ids)
  }
}
