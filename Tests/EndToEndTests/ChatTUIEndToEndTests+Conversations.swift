import Foundation
import NearbyCore
import NearbyTestSupport
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// The terminal chat as a chat client: conversations, scrollback, pastes, the bell and
/// history, with alice in tmux and bob in line mode on the private LAN.
extension ChatTUIEndToEndTests {
  /// Starts alice, lets bob invite her and has her accept with a bare `/accept`.
  static func startConnected(_ tmux: Tmux, bob: LineModePeer, directory: String, service: ServiceType, extra: String = "") async throws {
    try await startAlice(tmux, directory: directory, service: service, extra: extra)
    try await tmux.waitForScreen("the prompt") { isPrompt($0.lastContent) }
    try await bob.waitForLine(containing: "* found alice")
    bob.send("/invite alice")
    try await tmux.waitForScreen("bob's invitation") { $0.contains { $0.contains("* bob (") && $0.contains("invites you") } }
    try await tmux.type("/accept")
    try await tmux.press("Enter")
    try await tmux.waitForScreen("the answer to /accept") { $0.contains { $0.contains("* accepting the invitation from bob (") } }
    try await bob.waitForLine(containing: "connected to alice")
    try await tmux.waitForScreen("the connected count") { statusBar($0).contains("alice: 1 connected") }
  }

  /// The row above the input line (which is one row here).
  static func statusBar(_ rows: [String]) -> String {
    let content = rows.trimmedBottom
    return content.count >= 2 ? content[content.count - 2] : ""
  }

  /// Runs `body` with bob in line mode (`--accept all`), who must end well afterwards.
  static func withBob(
    _ directory: String, _ service: ServiceType, json: Bool = false, _ body: (LineModePeer) async throws -> Void
  ) async throws {
    let bob = try LineModePeer(
      name: "bob", service: service.name, stateDirectory: directory + "/bob", extraArguments: ["--accept", "all"] + (json ? ["--json"] : []))
    defer { bob.process.terminate(SIGKILL) }
    try await body(bob)
    #expect(await bob.finish() == 0)
  }

  @Test func altTwoShowsThePrivateConversationWhereALineIsAPrivateMessage() async throws {
    let directory = try TemporaryDirectory()
    let service = LAN.uniqueServiceType()
    try await Self.withBob(directory.path, service) { bob in
      try await Self.withTmux(columns: 100, rows: 24) { tmux in
        try await Self.startConnected(tmux, bob: bob, directory: directory.path, service: service)
        bob.send("hello everyone")
        try await tmux.waitForScreen("bob's public message") { $0.contains { $0.hasSuffix("  bob: hello everyone") } }
        bob.send("/msg alice psst, just you")
        let hidden = try await tmux.waitForScreen("the unread private message") { Self.statusBar($0).hasPrefix("[1:all] 2:bob ?(1!) │") }
        #expect(!hidden.contains { $0.contains("psst") }, "\(hidden)")

        try await tmux.press("M-2")
        let shown = try await tmux.waitForScreen("bob's conversation") { $0.lastContent == "[bob]" }
        #expect(shown.contains { $0.hasSuffix("  bob: psst, just you") }, "\(shown)")
        #expect(!shown.contains { $0.contains("hello everyone") }, "\(shown)")
        #expect(Self.statusBar(shown).hasPrefix("1:all [2:bob ?] │"), "\(shown)")

        try await tmux.type("hi bob, only you")
        try await tmux.press("Enter")
        try await bob.waitForLine(containing: "alice (private): hi bob, only you")
        try await tmux.waitForScreen("the delivery mark") { $0.contains { $0.hasSuffix("✓ alice: hi bob, only you") } }

        try await tmux.press("M-1")
        let back = try await tmux.waitForScreen("the conversation with everyone") { $0.lastContent == "[all]" }
        #expect(back.contains { $0.hasSuffix("  bob: hello everyone") }, "\(back)")
        try await tmux.type("/quit")
        try await tmux.press("Enter")
        try await Self.expectCookedShell(tmux, directory: directory.path)
      }
    }
  }

  @Test func aPasteOfThreeLinesArrivesAsOneMessageWithTwoNewlines() async throws {
    let directory = try TemporaryDirectory()
    let service = LAN.uniqueServiceType()
    try await Self.withBob(directory.path, service, json: true) { bob in
      try await Self.withTmux(columns: 100, rows: 24) { tmux in
        try await Self.startAlice(tmux, directory: directory.path, service: service)
        try await tmux.waitForScreen("bob found") { $0.contains { $0.contains("* found bob") } }
        try await tmux.type("/invite bob")
        try await tmux.press("Enter")
        try await bob.waitForLine(containing: #""event":"connected""#)
        try await tmux.waitForScreen("the connected count") { Self.statusBar($0).contains("alice: 1 connected") }

        // tmux pastes with the bracketed-paste markers the chat asked for (and turns LF into CR).
        let buffer = directory.path + "/paste.txt"
        try "first line\nsecond line\nthird line".write(toFile: buffer, atomically: true, encoding: .utf8)
        try await tmux.command("load-buffer", buffer)
        try await tmux.command("paste-buffer", "-p", "-t", tmux.target)
        let pasted = try await tmux.waitForScreen("the paste in the input line") {
          $0.trimmedBottom.suffix(3) == ["[all] first line", "second line", "third line"]
        }
        #expect(!pasted.contains { $0.contains("alice: first line") }, "nothing sent before Enter: \(pasted)")
        try await tmux.press("Enter")

        let line = try await bob.waitForLine(containing: #""event":"message""#)
        let event = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
        #expect(event?["text"] as? String == "first line\nsecond line\nthird line", "\(line)")
        try await tmux.waitForScreen("the message in alice's log") { rows in
          rows.contains { $0.hasSuffix("✓ alice: first line") } && rows.contains { $0.hasSuffix(" second line") }
        }
        try await tmux.type("/quit")
        try await tmux.press("Enter")
        try await Self.expectCookedShell(tmux, directory: directory.path)
        // One message, not three.
        #expect(bob.output.all.filter { $0.contains(#""event":"message""#) }.isEmpty)
      }
    }
  }

  @Test func pageUpShowsAnEarlierLineAndArrivalsDoNotMoveTheView() async throws {
    let directory = try TemporaryDirectory()
    let service = LAN.uniqueServiceType()
    try await Self.withBob(directory.path, service) { bob in
      try await Self.withTmux(columns: 80, rows: 24) { tmux in
        try await Self.startConnected(tmux, bob: bob, directory: directory.path, service: service)
        for index in 1...40 { bob.send("line \(index < 10 ? "0" : "")\(index)") }
        try await tmux.waitForScreen("the 40 lines") { $0.contains { $0.hasSuffix("  bob: line 40") } }

        try await tmux.press("PPage")
        let scrolled = try await tmux.waitForScreen("an earlier page") { Self.statusBar($0).contains("-- scrolled up (End) --") }
        #expect(scrolled.contains { $0.hasSuffix("  bob: line 12") }, "\(scrolled)")
        #expect(!scrolled.contains { $0.hasSuffix("  bob: line 40") }, "\(scrolled)")
        let log = Array(scrolled.trimmedBottom.dropLast(2))

        bob.send("a new arrival")
        let after = try await tmux.waitForScreen("the count of new lines") { Self.statusBar($0).contains("-- 1 new below (End) --") }
        #expect(Array(after.trimmedBottom.dropLast(2)) == log, "the view did not move: \(after)")

        try await tmux.press("End")
        let bottom = try await tmux.waitForScreen("the newest lines") { $0.contains { $0.hasSuffix("  bob: a new arrival") } }
        #expect(!Self.statusBar(bottom).contains("--"), "\(bottom)")
        try await tmux.type("/quit")
        try await tmux.press("Enter")
        try await Self.expectCookedShell(tmux, directory: directory.path)
      }
    }
  }

  @Test func thePrivateMessageToAHiddenConversationRingsTheBell() async throws {
    let directory = try TemporaryDirectory()
    let service = LAN.uniqueServiceType()
    try await Self.withBob(directory.path, service) { bob in
      try await Self.withTmux(columns: 100, rows: 24) { tmux in
        try await Self.startConnected(tmux, bob: bob, directory: directory.path, service: service)
        // Everything the chat writes to the terminal, byte for byte.
        let raw = directory.path + "/raw"
        try await tmux.command("pipe-pane", "-o", "-t", tmux.target, "cat >> \(raw)")
        func bells() -> Int { ((try? Data(contentsOf: URL(fileURLWithPath: raw))) ?? Data()).filter { $0 == 0x07 }.count }

        bob.send("a public line")
        try await tmux.waitForScreen("the public line") { $0.contains { $0.hasSuffix("  bob: a public line") } }
        try await Task.sleep(for: .milliseconds(300))
        #expect(bells() == 0, "no bell for a line in the conversation shown")

        bob.send("/msg alice ding")
        try await tmux.waitForScreen("the unread private message") { Self.statusBar($0).hasPrefix("[1:all] 2:bob ?(1!) │") }
        let deadline = ContinuousClock.now + .seconds(5)
        while bells() == 0 && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(50)) }
        #expect(bells() == 1)
        try await tmux.type("/quit")
        try await tmux.press("Enter")
        try await Self.expectCookedShell(tmux, directory: directory.path)
      }
    }
  }

  @Test func historyIsShownAfterARestart() async throws {
    let directory = try TemporaryDirectory()
    let service = LAN.uniqueServiceType()
    try await Self.withBob(directory.path, service) { bob in
      try await Self.withTmux(columns: 100, rows: 24) { tmux in
        try await Self.startConnected(tmux, bob: bob, directory: directory.path, service: service)
        bob.send("remember this, alice")
        try await tmux.waitForScreen("bob's message") { $0.contains { $0.hasSuffix("  bob: remember this, alice") } }
        try await tmux.type("and this too")
        try await tmux.press("Enter")
        try await tmux.waitForScreen("the delivery mark") { $0.contains { $0.hasSuffix("✓ alice: and this too") } }
        try await tmux.type("/quit")
        try await tmux.press("Enter")
        try await Self.expectCookedShell(tmux, directory: directory.path)
        try await tmux.type("clear")
        try await tmux.press("Enter")
        try await tmux.waitForScreen("a clear screen") { $0.trimmedBottom == ["$"] }

        // A new run with the same state directory shows the conversation as it was.
        try await Self.startAlice(tmux, directory: directory.path, service: service)
        let restored = try await tmux.waitForScreen("the history and the ready line") { rows in
          rows.contains { $0.hasSuffix("  bob: remember this, alice") } && rows.contains { $0.hasSuffix("✓ alice: and this too") }
            && rows.contains { $0.contains("* ready: alice") }
        }
        let history = restored.firstIndex { $0.hasSuffix("  bob: remember this, alice") } ?? 0
        let ready = restored.lastIndex { $0.contains("* ready: alice") } ?? 0
        #expect(history < ready, "the old lines come before this run's: \(restored)")
        let mode = try FileManager.default.attributesOfItem(atPath: directory.path + "/alice/logs/all.log")[.posixPermissions] as? Int
        #expect(mode == 0o600)
        try await tmux.type("/quit")
        try await tmux.press("Enter")
        try await Self.expectCookedShell(tmux, directory: directory.path)
        try await tmux.type("clear")
        try await tmux.press("Enter")
        try await tmux.waitForScreen("a clear screen") { $0.trimmedBottom == ["$"] }

        // --no-history: none shown.
        try await Self.startAlice(tmux, directory: directory.path, service: service, extra: " --no-history")
        let fresh = try await tmux.waitForScreen("the ready line") { $0.contains { $0.contains("* ready: alice") } && Self.isPrompt($0.lastContent) }
        #expect(!fresh.contains { $0.contains("remember this") }, "\(fresh)")
        try await tmux.type("/quit")
        try await tmux.press("Enter")
        try await Self.expectCookedShell(tmux, directory: directory.path)
      }
    }
  }
}
