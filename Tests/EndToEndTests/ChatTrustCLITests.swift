import Foundation
import NearbyTestSupport
import Testing

/// `/verify`, `/trust`, `--accept known` and `nearby peers` through real chat processes and
/// their JSON events: what a person comparing codes does, end to end.
@Suite("Verifying and trusting peers in the chat (real processes)", .enabled(if: LAN.avahiAvailable, "needs scripts/lan loopback"))
struct ChatTrustCLITests {
  static func chat(_ name: String, state: String, service: String, _ extra: [String]) throws -> PeerProcess {
    try PeerProcess(name, ["chat", "--name", name, "--json", "--service", service, "--state-dir", state] + extra)
  }

  static func isPeer(_ name: String) -> @Sendable ([String: Any]) -> Bool {
    { ($0["peer"] as? [String: Any])?["name"] as? String == name }
  }

  @Test func codesMatchOnBothSidesTrustIsRememberedAndAcceptKnownTakesOnlyVerifiedPeers() async throws {
    let service = LAN.uniqueServiceType().name
    let aliceState = Repository.temporaryDirectory()
    let bobState = Repository.temporaryDirectory()

    // First meeting: both unverified; alice asks to compare, bob trusts alice.
    var bob = try Self.chat("bob", state: bobState, service: service, ["--accept", "all"])
    var port = try await bob.expect("ready")["port"] as! Int
    var alice = try Self.chat("alice", state: aliceState, service: service, ["--connect", "127.0.0.1:\(port)"])
    #expect(try await alice.expect("connected", where: Self.isPeer("bob"))["verified"] as? Bool == false)
    #expect(try await bob.expect("connected", where: Self.isPeer("alice"))["verified"] as? Bool == false)
    alice.send("/verify bob")
    let shown = try await alice.expect("verification", where: Self.isPeer("bob"))
    let asked = try await bob.expect("verification", where: Self.isPeer("alice"))
    let code = try #require(shown["code"] as? String)
    #expect(code.filter(\.isNumber).count == 6, "\(code)")
    #expect(asked["code"] as? String == code, "the same session shows the same code on both sides")
    #expect(shown["asked"] as? Bool == false)
    #expect(asked["asked"] as? Bool == true)
    bob.send("/trust alice")
    try await bob.expect("trusted", where: Self.isPeer("alice"))
    bob.send("/trust nobody")
    let problem = try await bob.expect("error")
    #expect((problem["message"] as? String ?? "").contains("nobody"), "\(problem)")
    await alice.stop()
    await bob.stop()

    // Remembered in bob's state directory: alice verified (and alice's says bob is not).
    let (status, listing) = try await run([Repository.nearby, "peers", "--state-dir", bobState, "--json"])
    #expect(status == 0)
    let known = listing.split(separator: "\n").compactMap { JSONObject(String($0))?.value }
    #expect(known.count == 1)
    #expect(known.first?["name"] as? String == "alice")
    #expect(known.first?["verified"] as? Bool == true)
    let (_, aliceListing) = try await run([Repository.nearby, "peers", "--state-dir", aliceState, "--json"])
    #expect(aliceListing.contains("\"verified\":false"), "\(aliceListing)")

    // bob now takes only verified peers: a stranger is turned away, alice is let in.
    bob = try Self.chat("bob", state: bobState, service: service, ["--accept", "known"])
    port = try await bob.expect("ready")["port"] as! Int
    let carol = try Self.chat("carol", state: Repository.temporaryDirectory(), service: service, ["--connect", "127.0.0.1:\(port)"])
    let turnedAway = try await carol.expect("declined", where: Self.isPeer("bob"))
    #expect(turnedAway["reason"] as? String != nil)
    alice = try Self.chat("alice", state: aliceState, service: service, ["--connect", "127.0.0.1:\(port)"])
    #expect(try await bob.expect("connected", where: Self.isPeer("alice"))["verified"] as? Bool == true)
    #expect(try await alice.expect("connected", where: Self.isPeer("bob"))["verified"] as? Bool == false)
    #expect(!bob.unconsumed.contains { $0.contains("\"event\":\"connected\"") && $0.contains("carol") }, "carol got in")
    await carol.stop()
    await alice.stop()
    await bob.stop()
  }
}
