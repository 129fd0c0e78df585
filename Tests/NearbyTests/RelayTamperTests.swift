import Foundation
import NearbyCore
import NearbyCrypto
import NearbyLab
import NearbyTestSupport
import Testing

@testable import Nearby

/// A relay in the middle that sees real traffic: mallory is the relay alice and carol both
/// joined, with rosters that give each the other's real key, so carol's messages to alice are
/// sealed end to end and pass through mallory's hands. What mallory changes is caught and
/// named; what she passes on untouched arrives once.
@Suite("A relay that alters real messages")
struct RelayTamperTests {
  @Test func alteredReplayedAndRenumberedMessagesFromARealPeerAreCaughtAndTheRelayNamed() async throws {
    let aliceKeys = SecureTestPeer.makeIdentity()
    let carolKeys = SecureTestPeer.makeIdentity()
    let relayKeys = SecureTestPeer.makeIdentity()
    // Mallory is a test peer that answers no PING: a dead-peer timeout of a minute keeps her
    // (with 4 s, a full parallel run once timed her out between two steps of this test).
    let patient: @Sendable (inout SessionConfiguration) -> Void = { $0.timeouts.deadPeer = .seconds(60) }
    let alice = try await RunningSession.start("alice", identity: PeerIdentity(keyPair: aliceKeys), configure: patient)
    let carol = try await RunningSession.start("carol", identity: PeerIdentity(keyPair: carolKeys), configure: patient)
    let toAlice = try SecureTestPeer(port: alice.port, identity: relayKeys)
    let toCarol = try SecureTestPeer(port: carol.port, identity: relayKeys)
    try await toAlice.joinSession(name: "mallory", capabilities: .relay)
    try await toCarol.joinSession(name: "mallory", capabilities: .relay)
    toAlice.write(.roster(Frame.Roster(kind: .full, entries: [Frame.Roster.Entry(peer: carol.peer, hops: 1, publicKey: carolKeys.publicKey.bytes)])))
    toCarol.write(.roster(Frame.Roster(kind: .full, entries: [Frame.Roster.Entry(peer: alice.peer, hops: 1, publicKey: aliceKeys.publicKey.bytes)])))
    let aliceID = alice.peer.id
    _ = try await carol.expect("alice reachable through mallory") { if case .reachable(let p, _) = $0, p.id == aliceID { true } else { nil } }

    /// Carol sends `text` to alice: the MESSAGE frame as it reaches the relay.
    func relayed(_ text: String) async throws -> Frame.Message {
      _ = try await carol.session.send(Array(text.utf8), to: .peer(aliceID))
      let received = await toCarol.readInBackground { frames in frames.contains { if case .message = $0 { true } else { false } } }
      guard let frame = received.frames.lazy.compactMap({ if case .message(let m) = $0 { m } else { nil } }).first else {
        throw SecureTestPeerError("carol's message did not reach the relay: \(received.frames)")
      }
      return frame
    }
    let original = try await relayed("meet me at noon")
    #expect(!original.body.contains(subsequence: Array("noon".utf8)), "the relay sees the text")

    // Altered: one bit of the sealed body; renumbered: another message id; re-addressed.
    var altered = original
    altered.body[altered.body.count / 2] ^= 0x01
    var renumbered = original
    renumbered.id &+= 1
    var readdressed = original
    readdressed.recipients = []
    toAlice.write(.message(altered), .message(renumbered), .message(readdressed))
    func reports() -> [String] {
      alice.events.all.compactMap {
        if case .error(.relayTampered(let relay, let origin, let detail)) = $0, relay?.id == relayKeys.peerID, origin == carol.peer.id {
          detail
        } else {
          nil
        }
      }
    }
    let deadline = ContinuousClock.now + .seconds(10)
    while reports().count < 3, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
    #expect(reports().count == 3, "each changed copy is reported, naming the relay: \(alice.events.all)")

    // Untouched, it arrives; sent again (a replay), it does not arrive a second time.
    toAlice.write(.message(original), .message(original))
    let second = try await relayed("second")
    toAlice.write(.message(second))
    var texts: [String] = []
    while texts.count < 2 {
      texts.append(
        try await alice.expect("carol's messages") {
          if case .message(let m) = $0, m.from.id == carol.peer.id { String(decoding: m.body, as: UTF8.self) } else { nil }
        })
    }
    #expect(texts == ["meet me at noon", "second"], "the replay was delivered again, or something altered was delivered")
    #expect(!alice.events.all.contains { if case .message(let m) = $0 { m.id.rawValue == renumbered.id } else { false } })
    try await carol.stop()
    try await alice.stop()
  }
}

extension Array where Element == UInt8 {
  fileprivate func contains(subsequence: [UInt8]) -> Bool {
    guard subsequence.count <= count else { return false }
    return (0...(count - subsequence.count)).contains { Array(self[$0..<$0 + subsequence.count]) == subsequence }
  }
}
