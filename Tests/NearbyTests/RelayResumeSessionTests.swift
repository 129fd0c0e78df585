import Nearby
import NearbyTestSupport
import Testing

/// A relay session over real TCP that is lost for a moment while messages are on their way
/// through it (PROTOCOL.md 6.5): alice reaches the relay through a ``FaultyLink``, carol
/// directly.
@Suite("Relay sessions resume over real TCP (loopback, a faulty link)")
struct RelayResumeSessionTests {
  /// Short timeouts, but a dead peer noticed only after 3 s: the ten messages must all be
  /// sent into the partition before the relay's session is suspended, also in a loaded run
  /// (with 700 ms, a parallel run once suspended it after a few: "not connected").
  static func timeouts(_ configuration: inout SessionConfiguration) {
    ReconnectSessionTests.fast(&configuration)
    configuration.timeouts.deadPeer = .seconds(3)
  }

  @Test func messagesOnTheirWayThroughARelayDuringAPartitionArriveOnceAndAreDelivered() async throws {
    let relay = try await RunningSession.start("relay", policy: .all) {
      $0.isRelay = true
      Self.timeouts(&$0)
    }
    let alice = try await RunningSession.start("alice") { Self.timeouts(&$0) }
    let carol = try await RunningSession.start("carol") { Self.timeouts(&$0) }
    let link = try FaultyLink(forwardingTo: relay.port)
    await alice.session.invite(endpoints: [Endpoint(host: "127.0.0.1", port: link.port)])
    _ = try await alice.expect("relay connected") { if case .connected(let p, _) = $0, p.id == relay.peer.id { true } else { nil } }
    try await connect(carol, relay)
    let carolID = carol.peer.id
    _ = try await alice.expect("carol reachable") { if case .reachable(let p, _) = $0, p.id == carolID { true } else { nil } }

    link.set(.partition)
    let sent = (1...10).map { "r\($0)" }
    var ids: [MessageID] = []
    for text in sent { ids.append(try await alice.session.send(Array(text.utf8), to: .peer(carolID))) }
    let relayPeer = relay.peer
    _ = try await alice.expect("reconnecting", within: .seconds(10)) { if case .reconnecting(relayPeer, _) = $0 { true } else { nil } }
    try await Task.sleep(for: .milliseconds(500))
    link.set(.pass)
    _ = try await alice.expect("reconnected") { if case .reconnected(relayPeer) = $0 { true } else { nil } }
    #expect(try await ReconnectSessionTests.texts(carol, count: 10) == sent)
    for id in ids {
      let report = await alice.session.delivery(of: id)
      #expect(report?.isDelivered == true, "\(id): \(String(describing: report))")
    }
    try await Task.sleep(for: .milliseconds(300))
    #expect(!carol.events.all.contains { if case .message = $0 { true } else { false } }, "nothing twice")
    #expect(!alice.events.all.contains { if case .error(.undelivered) = $0 { true } else { false } }, "nothing reported failed")
    link.stop()
    try await alice.stop()
    try await carol.stop()
    try await relay.stop()
  }
}
