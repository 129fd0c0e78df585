import Nearby
import NearbyChat
import NearbyScript
import Testing

@testable import NearbyCore

/// Peers and events for the script tests.
enum ScriptFixtures {
  static let alice = Peer(id: PeerID(hex: "933af21c000000000000000000000001")!, name: try! DisplayName("alice"))
  static let bob = Peer(id: PeerID(hex: "5e6f7a8b000000000000000000000002")!, name: try! DisplayName("Bob"))

  static func message(from peer: Peer, _ text: String) -> ScriptEvent {
    ScriptEvent(kind: .message, peers: [peer], text: text)
  }
}

@Suite("Script expectations: which events match")
struct ScriptExpectationTests {
  @Test func kindPeerAndText() {
    let hello = ScriptFixtures.message(from: ScriptFixtures.bob, "hello alice")
    #expect(ScriptExpectation(event: .message).matches(hello))
    #expect(!ScriptExpectation(event: .delivered).matches(hello))
    #expect(ScriptExpectation(event: .message, peer: "bob").matches(hello))
    #expect(ScriptExpectation(event: .message, peer: "BOB").matches(hello))
    #expect(ScriptExpectation(event: .message, peer: "5e6f").matches(hello))
    #expect(ScriptExpectation(event: .message, peer: "5E6F7A8B").matches(hello))
    #expect(!ScriptExpectation(event: .message, peer: "5e6").matches(hello), "fewer than 4 hex digits are not an id")
    #expect(!ScriptExpectation(event: .message, peer: "alice").matches(hello))
    #expect(ScriptExpectation(event: .message, text: .exact("hello alice")).matches(hello))
    #expect(!ScriptExpectation(event: .message, text: .exact("hello")).matches(hello), "quoted text matches exactly")
    #expect(ScriptExpectation(event: .message, text: .regex("hello", ignoresCase: false)).matches(hello), "a regex matches anywhere")
    #expect(!ScriptExpectation(event: .message, text: .regex("^alice", ignoresCase: false)).matches(hello))
    #expect(ScriptExpectation(event: .message, text: .regex("HELLO (alice|bob)$", ignoresCase: true)).matches(hello))
    #expect(!ScriptExpectation(event: .message, text: .regex("HELLO", ignoresCase: false)).matches(hello))
    #expect(ScriptExpectation(event: .message, peer: "bob", text: .regex(#"\w+ alice"#, ignoresCase: false)).matches(hello))
  }

  @Test func chatLinesBecomeEventsWithTheirText() throws {
    let context = Invitation(
      connection: ConnectionID(1), invitationID: 7, peer: ScriptFixtures.alice, context: Array("lunch?".utf8), expiresAt: .seconds(30))
    let cases: [(ChatLine, ScriptEventKind, [Peer], String)] = [
      (.event(.invitation(context)), .invitation, [ScriptFixtures.alice], "lunch?"),
      (
        .event(.connected(ScriptFixtures.bob, PeerSecurity(verificationCode: "123456", isVerified: false))), .connected, [ScriptFixtures.bob],
        "* connected to Bob (5e6f7a8b), unverified: code 123 456 (/verify Bob)"
      ),
      (.event(.declined(ScriptFixtures.bob, .declined)), .declined, [ScriptFixtures.bob], "declined"),
      (.event(.declined(ScriptFixtures.bob, .timeout)), .declined, [ScriptFixtures.bob], "timeout"),
      (
        .event(.disconnected(ScriptFixtures.bob, .goodbye(.shuttingDown))), .disconnected, [ScriptFixtures.bob],
        DisconnectReason.goodbye(.shuttingDown).description
      ),
      (
        .event(.message(ReceivedMessage(id: 1, from: ScriptFixtures.bob, isPrivate: false, timestamp: 0, body: Array("hi alice".utf8)))), .message,
        [ScriptFixtures.bob],
        "hi alice"
      ),
      (.event(.delivered(messageID: 9, to: ScriptFixtures.bob)), .delivered, [ScriptFixtures.bob], "* delivered #9 to Bob (5e6f7a8b)"),
      (.event(.error(.rejected("nobody is connected"))), .error, [], "nobody is connected"),
      (.event(.status(.advertised(name: "alice #2"))), .advertised, [], "alice #2"),
      (.event(.invitationWithdrawn(ScriptFixtures.alice, "timeout")), .invitationWithdrawn, [ScriptFixtures.alice], "timeout"),
      (.sent(id: 3, text: "hello", to: [ScriptFixtures.bob], isPrivate: false), .sent, [ScriptFixtures.bob], "hello"),
      (.who([ScriptFixtures.bob], verified: []), .who, [ScriptFixtures.bob], "* connected: Bob (5e6f7a8b) [unverified]"),
      (.notice("hi there"), .notice, [], "hi there"),
      (
        .ready(ScriptFixtures.alice, port: 4000, service: .default), .ready, [],
        "* ready: alice (933af21c) listening on port 4000, service _nearby-devices._tcp — /help for commands"
      ),
    ]
    for (line, kind, peers, text) in cases {
      let event = try #require(ScriptEvent(line))
      #expect(event.kind == kind)
      #expect(event.peers == peers)
      #expect(event.text == text)
      #expect(!event.isCommandError)
    }
    let refused = try #require(ScriptEvent(.error("no peer called 'zed'")))
    #expect(refused.kind == .error && refused.isCommandError && refused.text == "no peer called 'zed'")
    #expect(ScriptEvent(.event(.status(.listening(port: 1)))) == nil, "lines the chat does not show are no events")
  }

  @Test func eventNamesAreTheJSONNames() {
    #expect(ScriptEventKind(scriptName: "Connected") == .connected)
    #expect(ScriptEventKind(scriptName: "withdrawn") == .invitationWithdrawn)
    #expect(ScriptEventKind(scriptName: "invitationwithdrawn") == .invitationWithdrawn)
    #expect(ScriptEventKind(scriptName: "conected") == nil)
    #expect(!ScriptEventKind.notice.hasPeer && ScriptEventKind.delivered.hasPeer)
  }
}
