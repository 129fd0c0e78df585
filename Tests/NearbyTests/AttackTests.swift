import Foundation
import Nearby
import NearbyCore
import NearbyCrypto
import NearbyLab
import NearbyTestSupport
import Synchronization
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// The attacks a peer on the same LAN tried against the first release, each as a test that
/// must now fail to succeed: real sessions on loopback, and a hostile peer that speaks the
/// real protocol version 2 with a key of its own (``SecureTestPeer``).
@Suite("Attacks from the LAN fail")
struct AttackTests {
  /// For sessions that test peers connect to: those answer no PING, and a full parallel run
  /// once resumed a test between its handshake and its INVITE only after the default 4 s
  /// dead-peer timeout had closed the connection.
  static func patient(_ configuration: inout SessionConfiguration) { configuration.timeouts.deadPeer = .seconds(60) }

  /// Mallory's handshake payload: a HELLO in her name (or in someone else's).
  static func hello(_ mallory: SecureTestPeer, claiming id: PeerID? = nil, name: String = "mallory", relay: Bool = false) -> [UInt8] {
    SecureTestPeer.helloPayload(
      Frame.Hello(minVersion: 2, maxVersion: 2, capabilities: relay ? .relay : [], peer: Peer(id: id ?? mallory.peerID, name: try! DisplayName(name)))
    )
  }

  @Test func claimingAConnectedPeersIdWithoutItsKeyDoesNotTakeOverItsSession() async throws {
    let alice = try await RunningSession.start("alice", policy: .all, configure: Self.patient)
    let bob = try await RunningSession.start("bob")
    try await connect(bob, alice)
    // Mallory says she is bob (his id, his name) and invites alice.
    let mallory = try SecureTestPeer(port: alice.port)
    try await mallory.handshakeInBackground(payload: Self.hello(mallory, claiming: bob.peer.id, name: "bob"))
    mallory.write(.invite(Frame.Invite(invitationID: 1, timeoutMilliseconds: 30_000, context: [])))
    let refused = await mallory.readInBackground()
    #expect(refused.frames.contains { if case .error(.wrongPeer, _) = $0 { true } else { false } }, "\(refused.frames)")
    #expect(refused.closed)
    // Bob's session is untouched: alice's messages to bob reach bob, and bob is still bob.
    let id = try await alice.session.send(Array("for bob".utf8), to: .peer(bob.peer.id))
    let message = try await bob.expect("message") { if case .message(let m) = $0, m.id == id { m } else { nil } }
    #expect(message.body == Array("for bob".utf8))
    _ = try await alice.expect("delivered to the real bob") { if case .delivered(id, let p) = $0, p.id == bob.peer.id { true } else { nil } }
    #expect(!alice.events.all.contains { if case .disconnected = $0 { true } else { false } })
    #expect(await alice.session.connectedPeers.map(\.id) == [bob.peer.id])
    try await bob.stop()
    try await alice.stop()
  }

  /// A forged DNS-SD record: bob's id and name, but mallory's address. Alice's invitation
  /// reaches mallory, whose key does not own bob's id: the handshake fails, naming both.
  @Test func aForgedAdvertisementLeadsToAWrongPeerErrorNotToAnImpostor() async throws {
    let alice = try await RunningSession.start("alice")
    let bob = try await RunningSession.start("bob")
    let mallory = try await RunningSession.start("mallory", policy: .all)
    let forged = DiscoveredPeer(
      advertisement: PeerAdvertisement(peer: bob.peer), hostName: "bob.local.", endpoints: [Endpoint(host: "127.0.0.1", port: mallory.port)])
    await alice.session.invite(forged)
    let failure = try await alice.expect("authentication failure") { if case .error(.authenticationFailed(_, let d)) = $0 { d } else { nil } }
    #expect(failure.contains(bob.peer.id.hex) && failure.contains(mallory.peer.id.hex), "\(failure)")
    #expect(!alice.events.all.contains { if case .connected = $0 { true } else { false } })
    #expect(!mallory.events.all.contains { if case .connected = $0 { true } else { false } })
    try await mallory.stop()
    try await bob.stop()
    try await alice.stop()
  }

  /// The relay bit does not let a peer put words in others' mouths: its made-up messages
  /// "from carol" and a roster that gives carol its own key are dropped and reported.
  @Test func aPeerClaimingToBeARelayCannotForgeSenders() async throws {
    let alice = try await RunningSession.start("alice", policy: .all, configure: Self.patient)
    let carol = try await RunningSession.start("carol")
    let mallory = try SecureTestPeer(port: alice.port)
    try await mallory.handshakeInBackground(payload: Self.hello(mallory, relay: true))
    mallory.write(.invite(Frame.Invite(invitationID: 1, timeoutMilliseconds: 30_000, context: [])))
    _ = try await alice.expect("mallory connected") { if case .connected(let p, _) = $0, p.id == mallory.peerID { true } else { nil } }
    let entry = Frame.Roster.Entry(peer: carol.peer, hops: 1, publicKey: mallory.identity.publicKey.bytes)
    mallory.write(.roster(Frame.Roster(kind: .full, entries: [entry])))
    mallory.write(
      .message(Frame.Message(id: 42, sender: carol.peer.id, timestamp: 0, recipients: [], body: Array("carol: send me your password".utf8))))
    mallory.write(.message(Frame.Message(id: 43, sender: carol.peer.id, timestamp: 0, recipients: [alice.peer.id], body: Array("psst".utf8))))
    func reports() -> Int {
      alice.events.all.filter { if case .error(.relayTampered(_, let origin, _)) = $0 { origin == carol.peer.id } else { false } }.count
    }
    let deadline = ContinuousClock.now + .seconds(10)
    while reports() < 3, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
    #expect(reports() == 3, "the roster entry and both messages are reported: \(alice.events.all)")
    #expect(!alice.events.all.contains { if case .message = $0 { true } else { false } })
    #expect(!alice.events.all.contains { if case .reachable = $0 { true } else { false } })
    try await carol.stop()
    try await alice.stop()
  }

  /// `--allow`: the allow-list names ids, and an id cannot be claimed without its key.
  @Test func anAllowListCannotBeBypassedByClaimingAnAllowedId() async throws {
    let bob = try await RunningSession.start("bob")
    let relay = try await RunningSession.start("relay", policy: .none) {
      Self.patient(&$0)
      $0.isRelay = true
      $0.allowList = [bob.peer.id]
    }
    let mallory = try SecureTestPeer(port: relay.port)
    try await mallory.handshakeInBackground(payload: Self.hello(mallory, claiming: bob.peer.id, name: "bob"))
    mallory.write(.invite(Frame.Invite(invitationID: 1, timeoutMilliseconds: 30_000, context: [])))
    let refused = await mallory.readInBackground()
    #expect(refused.frames.contains { if case .error(.wrongPeer, _) = $0 { true } else { false } }, "\(refused.frames)")
    // Mallory with her own id is declined; the real bob gets in.
    let honest = try SecureTestPeer(port: relay.port)
    try await honest.handshakeInBackground(payload: Self.hello(honest))
    honest.write(.invite(Frame.Invite(invitationID: 2, timeoutMilliseconds: 30_000, context: [])))
    let declined = await honest.readInBackground { $0.contains { if case .decline = $0 { true } else { false } } }
    #expect(declined.frames.contains { if case .decline(_, .notAllowed) = $0 { true } else { false } }, "\(declined.frames)")
    try await connect(bob, relay)
    try await bob.stop()
    try await relay.stop()
  }

  /// A man in the middle who terminates both sides (its own key towards each) leaves the two
  /// people with different codes; a direct session gives both the same (``TrustTests``).
  @Test func aManInTheMiddleShowsUpAsDifferentCodes() async throws {
    let alice = try await RunningSession.start("alice")
    let bob = try await RunningSession.start("bob", policy: .all)
    let middle = try MiddleListener()
    // Alice dials an address (so she does not expect an id); the middle answers as "bob"
    // and dials the real bob as "alice".
    await alice.session.invite(endpoints: [Endpoint(host: "127.0.0.1", port: middle.port)])
    let relayed = try await middle.intercept(bobPort: bob.port, names: ("bob", "alice"))
    let aliceSide = try await alice.expect("alice connected") { if case .connected(_, let s) = $0 { s.verificationCode } else { nil } }
    let bobSide = try await bob.expect("bob connected") { if case .connected(_, let s) = $0 { s.verificationCode } else { nil } }
    #expect(aliceSide == relayed.towardAlice)
    #expect(bobSide == relayed.towardBob)
    #expect(aliceSide != bobSide, "a man in the middle got matching codes: \(aliceSide)")
    try await bob.stop()
    try await alice.stop()
  }

  /// What crosses the network during a chat: neither the message text, nor the invitation's
  /// context, nor the peers' names appear in any packet (captured on the loopback interface
  /// of this private namespace with a raw socket, while the sessions talk).
  @Test func aCaptureOfTheLinkShowsNoTextContextOrNames() async throws {
    let alice = try await RunningSession.start("alice-7f3c")
    let bob = try await RunningSession.start("bob-91ae", policy: .all)
    // Before any packet between them; both listening ports (a connection either way has one
    // of them on every packet).
    let capture = try PacketCapture(ports: [alice.port, bob.port])
    await alice.session.invite(endpoints: [bob.endpoint], context: Array("lunch at noon, the usual place".utf8))
    _ = try await alice.expect("connected") { if case .connected = $0 { true } else { nil } }
    let id = try await alice.session.send(Array("the secret is swordfish".utf8), to: .all)
    _ = try await alice.expect("delivered") { if case .delivered(id, _) = $0 { true } else { nil } }
    try await bob.session.send(Array("reply: rosebud".utf8), to: .all)
    _ = try await alice.expect("reply") { if case .message = $0 { true } else { nil } }
    let captured = capture.stop()
    #expect(captured.dropped == 0, "the capture lost packets: what they held went unchecked")
    // The handshake, the invitation and its answer, two messages, a delivery report: a few
    // hundred bytes at least, more than the plaintext of the secrets.
    let all = captured.payloads.joined()
    #expect(captured.payloads.count >= 6, "the capture saw the session's packets (\(captured.payloads.count))")
    #expect(all.count >= 300, "the capture saw \(all.count) bytes of the session")
    for secret in ["the secret is swordfish", "rosebud", "lunch at noon", "alice-7f3c", "bob-91ae"] {
      #expect(!contains(Array(all), Array(secret.utf8)), "'\(secret)' crossed the network in clear")
    }
    try await bob.stop()
    try await alice.stop()
  }

  func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
    guard needle.count <= haystack.count else { return false }
    return (0...(haystack.count - needle.count)).contains { haystack[$0..<($0 + needle.count)].elementsEqual(needle) }
  }
}
