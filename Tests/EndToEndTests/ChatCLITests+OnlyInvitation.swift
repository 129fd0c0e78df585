import Foundation
import NearbyCore
import NearbyTestSupport
import Testing

extension ChatCLITests {
  /// `/accept` and `/decline` without a name answer the only pending invitation and say
  /// which; with none or several waiting they say so and answer nothing.
  @Test func acceptAndDeclineWithoutANameAnswerTheOnlyInvitation() async throws {
    let service = LAN.uniqueServiceType().name
    let alice = try Self.chat("alice", service, ["--accept", "ask"])
    let bob = try Self.chat("bob", service)
    let carol = try Self.chat("carol", service)
    @Sendable func name(_ event: [String: Any]) -> String? { (event["peer"] as? [String: Any])?["name"] as? String }

    alice.send("/accept")
    let none = try await alice.expect("error")
    #expect((none["message"] as? String)?.contains("no invitation is waiting") == true, "\(none)")

    try await bob.expect("found") { name($0) == "alice" }
    try await carol.expect("found") { name($0) == "alice" }
    bob.send("/invite alice")
    try await alice.expect("invitation") { name($0) == "bob" }
    carol.send("/invite alice")
    try await alice.expect("invitation") { name($0) == "carol" }
    alice.send("/decline")
    let several = try await alice.expect("error")
    let text = several["message"] as? String ?? ""
    #expect(text.contains("2 invitations are waiting") && text.contains("bob (") && text.contains("carol ("), "\(text)")
    #expect(text.contains("/decline NAME"), "\(text)")

    alice.send("/decline carol")
    try await carol.expect("declined") { name($0) == "alice" }
    alice.send("/accept")
    let notice = try await alice.expect("notice")
    #expect((notice["message"] as? String)?.hasPrefix("accepting the invitation from bob (") == true, "\(notice)")
    try await alice.expect("connected") { name($0) == "bob" }
    try await bob.expect("connected") { name($0) == "alice" }
    for peer in [alice, bob, carol] { await peer.stop() }
  }
}
