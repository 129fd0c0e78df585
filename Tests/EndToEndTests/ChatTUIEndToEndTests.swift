import Foundation
import NearbyCore
import NearbyTestSupport
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// The terminal chat for real: alice runs `nearby chat` in tmux, bob runs line mode, both
/// on the private LAN of `scripts/lan loopback` with real Avahi. One test at a time: their
/// processes at once load the machine for the timing-sensitive transport tests.
@Suite(
  .serialized, .enabled(if: LAN.avahiAvailable && Tmux.isAvailable && NearbyBinary.isBuilt, "needs scripts/lan loopback, tmux and a built nearby"))
struct ChatTUIEndToEndTests {
  /// The shell command that starts alice's chat in the tmux shell and leaves its pid in a file
  /// (`exec`: the pid is the chat's).
  static func startAlice(_ tmux: Tmux, directory: String, service: ServiceType, extra: String = "", environment: String = "") async throws {
    let command =
      "sh -c 'echo $$ > \(directory)/alice.pid; exec \(environment)\(NearbyBinary.path) chat --name alice --state-dir \(directory)/alice"
      + " --service \(service.name)\(extra)'"
    try await tmux.type(command)
    try await tmux.press("Enter")
  }

  /// The prompt of the conversation with everyone, or with a peer.
  static func isPrompt(_ row: String) -> Bool { row.hasPrefix("[all]") || row.hasPrefix("[bob]") }

  /// Runs `body` with a tmux server that is stopped afterwards, also when `body` throws.
  static func withTmux(columns: Int, rows: Int, _ body: (Tmux) async throws -> Void) async throws {
    let tmux = try await Tmux(columns: columns, rows: rows)
    do {
      try await body(tmux)
    } catch {
      await tmux.kill()
      throw error
    }
    await tmux.kill()
  }

  /// After the chat: the shell answers and the terminal is in cooked mode again.
  static func expectCookedShell(_ tmux: Tmux, directory: String) async throws {
    try await tmux.waitForScreen("the shell prompt") { $0.lastContent == "$" }
    try await tmux.type("stty -a > \(directory)/stty.txt; echo shell-$((40 + 2))")
    try await tmux.press("Enter")
    try await tmux.waitForScreen("the shell's answer") { $0.contains("shell-42") }
    let stty = try String(contentsOfFile: "\(directory)/stty.txt", encoding: .utf8)
    let flags = Set(stty.split(whereSeparator: { $0.isWhitespace || $0 == ";" }).map(String.init))
    for flag in ["icanon", "echo", "isig", "icrnl", "ixon"] {
      #expect(flags.contains(flag), "stty -a lacks \(flag): \(stty)")
    }
    // The shell restores termios after a job a signal killed, but not these: only the chat
    // turns the cursor and autowrap back on.
    let modes = try await tmux.command("display-message", "-p", "-t", tmux.target, "cursor=#{cursor_flag} wrap=#{wrap_flag}")
    #expect(modes.trimmingCharacters(in: .whitespacesAndNewlines) == "cursor=1 wrap=1")
  }

  @Test func typingSurvivesArrivalsResizesAndQuit() async throws {
    let directory = try TemporaryDirectory()
    let service = LAN.uniqueServiceType()
    let bob = try LineModePeer(name: "bob", service: service.name, stateDirectory: directory.path + "/bob", extraArguments: ["--accept", "all"])
    try await bob.waitForLine(containing: "* ready")
    defer { bob.process.terminate(SIGKILL) }
    try await Self.withTmux(columns: 100, rows: 30) { tmux in
      try await chat(tmux, with: bob, directory: directory.path, service: service)
    }
    #expect(await bob.finish() == 0)
  }

  func chat(_ tmux: Tmux, with bob: LineModePeer, directory: String, service: ServiceType) async throws {
    try await Self.startAlice(tmux, directory: directory, service: service)
    try await tmux.waitForScreen("bob found") { $0.contains { $0.contains("* found bob") } }

    try await tmux.type("/invite bob")
    try await tmux.press("Enter")
    try await bob.waitForLine(containing: "connected to alice")
    try await tmux.waitForScreen("the connected count") { Self.statusBar($0).contains("alice: 1 connected") }

    // Alice types half a line; bob's message arrives above it.
    let half = "héllo 日本 bo"
    try await tmux.type(half)
    try await tmux.waitForScreen("the half line") { $0.lastContent == "[all] " + half }
    bob.send("hi alice, from bob")
    let screen = try await tmux.waitForScreen("bob's message") { $0.contains { $0.hasSuffix("bob: hi alice, from bob") } }
    let rows = screen.trimmedBottom
    #expect(rows.last! == "[all] " + half, "\(screen)")
    #expect(Self.isPrompt(rows.last!))
    // (Other notices, such as "advertised", may arrive in between.)
    let bobRow = rows.lastIndex { $0.hasSuffix("bob: hi alice, from bob") }
    #expect(bobRow != nil && bobRow! < rows.count - 1, "\(screen)")

    // She finishes the line: bob gets it whole, and her line gets its delivery mark.
    try await tmux.type("b, the end")
    try await tmux.press("Enter")
    try await bob.waitForLine(containing: "alice: héllo 日本 bob, the end")
    try await tmux.waitForScreen("the delivery mark") { $0.contains { $0.hasSuffix("✓ alice: héllo 日本 bob, the end") } }

    // A line longer than the terminal, then a narrower terminal: everything is redrawn.
    let long = String(repeating: "0123456789", count: 12) + "日本"
    try await tmux.type(long)
    try await tmux.waitForScreen("the long line") { $0.trimmedBottom.suffix(2).joined() == "[all] " + long }
    try await tmux.resize(columns: 60, rows: 20)
    // Waits for the chat's redraw: tmux re-wraps the old rows at once (60, 40 and 28
    // columns), and under load the screen was caught in that state before the chat redrew.
    let resized = try await tmux.waitForScreen("the redraw at 60 columns") { rows in
      rows.count == 20 && rows.trimmedBottom.suffix(3).joined() == "[all] " + long
        && rows.trimmedBottom.suffix(3).map(\.count) == [60, 60, 8]
        && rows.contains { $0.hasSuffix("✓ alice: héllo 日本 bob, the end") }
    }
    #expect(resized.allSatisfy { $0.count <= 60 }, "\(resized)")
    // Redrawn by the chat, not just re-wrapped by tmux (which would give rows of 60, 40
    // and 30 columns from the 100 and 30 before).
    let input = Array(resized.trimmedBottom.suffix(3))
    #expect(input[0].hasPrefix("[all] 0123"), "\(resized)")
    #expect(input.map(\.count) == [60, 60, 8], "\(resized)")
    #expect(Self.statusBar(Array(resized.trimmedBottom.dropLast(2))).hasPrefix("[1:all] │ alice: 1 connected"), "\(resized)")
    #expect(resized.contains { $0.hasSuffix("bob: hi alice, from bob") })
    // Editing goes on at the new width.
    try await tmux.type("!")
    try await tmux.waitForScreen("the edit at 60 columns") { $0.lastContent == String(long.suffix(8)) + "!" }

    // Ctrl-U empties the line; /quit leaves a usable shell.
    try await tmux.press("C-u")
    try await tmux.waitForScreen("the empty input") { $0.lastContent == "[all]" }
    try await tmux.type("/quit")
    try await tmux.press("Enter")
    try await bob.waitForLine(containing: "disconnected from alice")
    try await Self.expectCookedShell(tmux, directory: directory)
  }

  @Test func sigtermRestoresTheTerminal() async throws {
    let directory = try TemporaryDirectory()
    try await Self.withTmux(columns: 80, rows: 24) { tmux in
      try await Self.startAlice(tmux, directory: directory.path, service: LAN.uniqueServiceType(), extra: " --no-color")
      try await tmux.waitForScreen("the prompt") { Self.isPrompt($0.lastContent) }
      try await tmux.type("half typed")
      try await tmux.waitForScreen("the half line") { $0.lastContent == "[all] half typed" }
      let pid = try String(contentsOfFile: directory.path + "/alice.pid", encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
      #expect(kill(pid_t(pid)!, SIGTERM) == 0)
      try await Self.expectCookedShell(tmux, directory: directory.path)
      // The chat cleared its input line on the way out.
      let after = try await tmux.screen()
      #expect(!after.contains { $0.contains("[all] half typed") }, "\(after)")
    }
  }

  @Test func ctrlDOnAnEmptyLineLeaves() async throws {
    let directory = try TemporaryDirectory()
    try await Self.withTmux(columns: 80, rows: 24) { tmux in
      try await Self.startAlice(tmux, directory: directory.path, service: LAN.uniqueServiceType())
      try await tmux.waitForScreen("the prompt") { Self.isPrompt($0.lastContent) }
      try await tmux.type("/who")
      try await tmux.press("Enter")
      try await tmux.waitForScreen("the answer to /who") { $0.contains { $0.hasSuffix("* nobody is connected") } }
      try await tmux.press("C-d")
      try await Self.expectCookedShell(tmux, directory: directory.path)
    }
    // The history file keeps what was typed, for the next run.
    let history = try String(contentsOfFile: directory.path + "/alice/history", encoding: .utf8)
    #expect(history == "/who\n")
  }

  /// NO_COLOR (https://no-color.org): set and not empty, the chat writes no styles at all;
  /// empty, it changes nothing.
  @Test(arguments: [("env NO_COLOR=1 ", false), ("env NO_COLOR= ", true)])
  func noColorInTheEnvironment(_ environment: String, styled: Bool) async throws {
    let directory = try TemporaryDirectory()
    try await Self.withTmux(columns: 80, rows: 24) { tmux in
      try await Self.startAlice(tmux, directory: directory.path, service: LAN.uniqueServiceType(), environment: environment)
      try await tmux.waitForScreen("the prompt") { Self.isPrompt($0.lastContent) }
      // An error line (nobody is connected), in the error style when there are styles.
      try await tmux.type("colours?")
      try await tmux.press("Enter")
      try await tmux.waitForScreen("the error") { $0.contains { $0.contains("! not sent") } }
      let escaped = try await tmux.command("capture-pane", "-e", "-p", "-t", tmux.target)
      #expect(escaped.contains("\u{1B}[") == styled, "\(escaped)")
      try await tmux.press("C-d")
      try await Self.expectCookedShell(tmux, directory: directory.path)
    }
  }
}
