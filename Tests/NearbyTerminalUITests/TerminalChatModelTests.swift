import NearbyChat
import NearbyCore
import Testing

@testable import NearbyTerminalUI

/// The terminal chat model driven with key bytes and chat lines, checked on a virtual
/// screen: what stays on it, where the cursor is, what goes to the chat. The screen is 60×12
/// unless a test says otherwise: the log on rows 0–9, the status bar on row 10, the input on
/// row 11.
@Suite struct TerminalChatModelTests {
  static let prompt = "[all] "

  @Test func startPutsThePromptOnTheBottomRowAndTheStatusBarAboveIt() {
    let chat = ChatScreenHarness()
    #expect(chat.lastRow == "[all]")
    #expect(chat.cursor == (11, 6))
    #expect(chat.statusBar == "[1:all] │ alice: 0 connected, 0 found")
    #expect(!chat.terminal.autowrap)
    #expect(chat.terminal.cursorVisible)
    #expect(chat.written.contains("\u{1B}[?2004h"), "bracketed paste on")
    #expect(chat.startEffects == [.openLog(.everyone)])
    #expect(chat.effects.isEmpty)
  }

  @Test func typingMovesTheCursorByDisplayWidth() {
    var chat = ChatScreenHarness()
    chat.type("héllo 日本 bo")
    #expect(chat.lastRow == Self.prompt + "héllo 日本 bo")
    #expect(chat.cursor.column == 6 + 13)
    chat.type(Keys.left + Keys.left + Keys.left)
    #expect(chat.cursor.column == 6 + 10)
    chat.type(Keys.left)
    #expect(chat.cursor.column == 6 + 8)
    chat.type(Keys.home)
    #expect(chat.cursor.column == 6)
    chat.type(Keys.ctrl("e"))
    #expect(chat.cursor.column == 6 + 13)
  }

  @Test func anArrivingMessageGoesAboveAHalfTypedLine() {
    var chat = ChatScreenHarness()
    chat.type("héllo 日本 bo")
    chat.type(Keys.left + Keys.left + Keys.left)  // the cursor right after 日本
    chat.receive(Fixtures.message("hi alice", from: Fixtures.bob))
    #expect(chat.log[9] == "  bob: hi alice")
    #expect(chat.lastRow == Self.prompt + "héllo 日本 bo")
    #expect(chat.cursor == (11, 6 + 10))
    chat.type("!")
    #expect(chat.lastRow == Self.prompt + "héllo 日本! bo")
    #expect(chat.model.editor.text == "héllo 日本! bo")
  }

  @Test func manyArrivingLinesScrollTheLogAndKeepTheInput() {
    var chat = ChatScreenHarness()
    chat.type("draft")
    for index in 1...30 { chat.receive(Fixtures.message("line \(index)", from: Fixtures.bob)) }
    #expect(chat.log.first == "  bob: line 21")
    #expect(chat.log.last == "  bob: line 30")
    #expect(chat.lastRow == Self.prompt + "draft")
    #expect(chat.shown.entries.count == 30, "the lines above are kept (PgUp shows them)")
  }

  @Test func onlyTheRowsThatChangedAreWritten() {
    var chat = ChatScreenHarness()
    chat.receive(Fixtures.message("hello", from: Fixtures.bob))
    chat.written = ""
    chat.type("x")
    // The input row only: no other row is touched.
    #expect(chat.written.components(separatedBy: "\u{1B}[2K").count == 2, "\(chat.written.debugDescription)")
    #expect(chat.written.contains("\u{1B}[12;1H"))
    chat.written = ""
    chat.send(.roster(found: [], connected: [], inviting: []))
    #expect(chat.written.isEmpty, "nothing changed")
  }

  @Test func wideCharactersWrapWhole() {
    var chat = ChatScreenHarness(columns: 20, rows: 6)
    chat.type("日本語日本語日本")
    #expect(chat.screen[4] == "[all] 日本語日本語日")
    #expect(chat.screen[5] == "本")
    #expect(chat.cursor == (5, 2))
    chat.receive(Fixtures.message("yo", from: Fixtures.bob))
    #expect(ChatScreenHarness.untimed(chat.screen[2]) == "  bob: yo")
    #expect(chat.screen[4] == "[all] 日本語日本語日")
    #expect(chat.screen[5] == "本")
  }

  @Test func aLineLongerThanTheTerminalWrapsAndSurvivesArrivals() {
    var chat = ChatScreenHarness(columns: 30, rows: 10)
    let text = String(repeating: "abcdefghij", count: 10)
    chat.type(text)
    #expect(chat.screen[6...].joined() == Self.prompt + text)
    #expect(chat.cursor == (9, 16))
    chat.receive(Fixtures.message("hello", from: Fixtures.bob))
    let digits = "0123456789012345678901234567890"
    chat.receive(Fixtures.message(digits, from: Fixtures.bob))
    #expect(chat.screen[6...].joined() == Self.prompt + text)
    #expect(chat.cursor == (9, 16))
    #expect(ChatScreenHarness.untimed(chat.screen[2]) == "  bob: hello")
    // Too narrow for an indent: the word that does not fit is cut where the row ends.
    #expect(ChatScreenHarness.untimed(chat.screen[3] + chat.screen[4]) == "  bob: " + digits)
    chat.type(Keys.enter)
    #expect(chat.takeSubmitted() == [text])
    // The input shrank to one row: the log takes the rows back, next to the status bar.
    #expect(chat.lastRow == "[all]")
    #expect(ChatScreenHarness.untimed(chat.screen[6] + chat.screen[7]) == "  bob: " + digits)
    #expect(ChatScreenHarness.untimed(chat.screen[5]) == "  bob: hello")
  }

  @Test func inputTallerThanTheScreenShowsTheRowsAroundTheCursor() {
    var chat = ChatScreenHarness(columns: 20, rows: 6)
    chat.type(String(repeating: "x", count: 200))
    #expect(chat.model.inputView.rows.count == 4)
    #expect(chat.cursor.row == 5)
    chat.type(Keys.home)
    #expect(chat.screen[2].hasPrefix(Self.prompt))
    #expect(chat.cursor == (2, 6))
  }

  @Test func messagesWrapAtWordsWithAHangingIndent() {
    var chat = ChatScreenHarness(columns: 44, rows: 8)
    chat.receive(Fixtures.message("the quick brown fox jumps over the lazy dog and keeps running", from: Fixtures.bob))
    let indent = String(repeating: " ", count: 18)
    #expect(Array(chat.logContent.suffix(3)) == ["  bob: the quick brown fox jumps", indent + "over the lazy dog and", indent + "keeps running"])
    // A word longer than a row is cut; a newline starts a row under the text too.
    chat.receive(Fixtures.message("see\nhttps://example.com/a/very/long/path/that/does/not/fit", from: Fixtures.carol))
    #expect(
      Array(chat.logContent.suffix(4)) == [
        "  carol: see", String(repeating: " ", count: 20) + "https://example.com/a/ve",
        String(repeating: " ", count: 20) + "ry/long/path/that/does/n", String(repeating: " ", count: 20) + "ot/fit",
      ])
  }

  @Test func resizeRepaintsEverything() {
    var chat = ChatScreenHarness(columns: 60, rows: 12)
    chat.receive(Fixtures.message("a message long enough to wrap at forty columns, at a word", from: Fixtures.bob))
    chat.receive(Fixtures.message("short", from: Fixtures.bob))
    chat.type("typing 日本 here")
    chat.resize(columns: 40, rows: 8)
    #expect(chat.screen.allSatisfy { DisplayWidth.of($0) <= 40 })
    #expect(chat.lastRow == Self.prompt + "typing 日本 here")
    let indent = String(repeating: " ", count: 18)
    #expect(chat.log.suffix(4) == ["  bob: a message long enough", indent + "to wrap at forty", indent + "columns, at a word", "  bob: short"])
    #expect(chat.cursor == (7, 6 + 16))
    chat.resize(columns: 100, rows: 20)
    #expect(chat.lastRow == Self.prompt + "typing 日本 here")
    #expect(chat.log.suffix(2) == ["  bob: a message long enough to wrap at forty columns, at a word", "  bob: short"])
    #expect(chat.cursor == (19, 22))
  }

  @Test func ownMessagesGetADeliveryMark() {
    var chat = ChatScreenHarness()
    chat.receive(.sent(id: 5, text: "hello", to: [Fixtures.bob, Fixtures.carol], isPrivate: false))
    #expect(chat.log[9] == ". alice: hello")
    chat.type("half")
    chat.receive(.event(.delivered(messageID: 5, to: Fixtures.bob)))
    chat.receive(.event(.delivered(messageID: 5, to: Fixtures.carol)))
    #expect(chat.log[9] == ". alice: hello", "the session says when every recipient answered")
    chat.receive(.settled(DeliveryReport(messageID: 5, recipients: 2, delivered: 2, failures: [])))
    #expect(chat.log[9] == "✓ alice: hello")
    #expect(chat.lastRow == Self.prompt + "half")
    #expect(chat.cursor == (11, 10))
    // No line for the delivery itself, also when it comes after the settlement.
    chat.receive(.event(.delivered(messageID: 5, to: Fixtures.carol)))
    #expect(chat.shown.entries.count == 1)
  }

  @Test func copiesOfTheModelDrawTheirOwnLines() {
    // Wrapped rows are cached, and the cache is shared by copies: each must still draw what it has.
    var chat = ChatScreenHarness()
    chat.receive(.sent(id: 5, text: "hello", to: [Fixtures.bob], isPrivate: false))
    var copy = chat.model
    _ = copy.update(.line(.settled(DeliveryReport(messageID: 5, recipients: 1, delivered: 1, failures: []))), now: chat.now)
    chat.receive(.settled(DeliveryReport(messageID: 5, recipients: 1, delivered: 0, failures: [])))
    #expect(chat.log[9] == "✗ alice: hello")
    #expect(ChatScreenHarness.untimed(copy.frame.rows[9].plain) == "✓ alice: hello")
  }

  @Test func aMarkIsUpdatedWhereTheLineIsNow() {
    var chat = ChatScreenHarness()
    chat.receive(.sent(id: 5, text: "hello", to: [Fixtures.bob], isPrivate: false))
    chat.receive(Fixtures.message("one", from: Fixtures.bob))
    chat.receive(Fixtures.message(String(repeating: "two ", count: 20), from: Fixtures.bob))
    let before = chat.screen
    chat.receive(.settled(DeliveryReport(messageID: 5, recipients: 1, delivered: 1, failures: [])))
    #expect(chat.log[6] == "✓ alice: hello")
    for row in chat.screen.indices where row != 6 { #expect(chat.screen[row] == before[row]) }
  }

  @Test func aMarkOffTheScreenChangesOnlyTheKeptLine() {
    var chat = ChatScreenHarness(rows: 5)
    chat.receive(.sent(id: 5, text: "hello", to: [Fixtures.bob], isPrivate: false))
    for index in 1...6 { chat.receive(Fixtures.message("\(index)", from: Fixtures.bob)) }
    let before = chat.screen
    chat.receive(.settled(DeliveryReport(messageID: 5, recipients: 1, delivered: 1, failures: [])))
    #expect(chat.screen == before)
    #expect(chat.shown.entries[0].line.plain.contains("✓ alice: hello"))
  }

  @Test func anUndeliveredMessageIsMarkedAndExplained() {
    var chat = ChatScreenHarness(columns: 100)
    chat.receive(.sent(id: 6, text: "are you there", to: [Fixtures.bob, Fixtures.carol], isPrivate: false))
    chat.receive(.event(.error(.undelivered(messageID: 6, peer: Fixtures.bob, peerID: Fixtures.bob.id, reason: .notConnected))))
    #expect(chat.log[8] == "✗ alice: are you there")
    #expect(chat.log[9].hasPrefix("! message 6 to bob (12345678) not delivered: not connected"))
  }

  @Test func invitationsAreNoticesThatLeaveTheInputAlone() {
    var chat = ChatScreenHarness(columns: 100)
    chat.type("hel")
    chat.receive(Fixtures.invitation(from: Fixtures.bob, context: "lunch?"))
    #expect(chat.log[9] == "* bob (12345678) invites you (context: lunch?) — /accept bob or /decline bob")
    #expect(chat.statusBar.hasSuffix("alice: 0 connected, 0 found, 1 invitation"))
    #expect(chat.lastRow == Self.prompt + "hel")
    #expect(chat.model.editor.text == "hel")
    #expect(chat.terminal.bells == 0, "the conversation it lands in is shown")
  }

  @Test func finishClearsTheStatusBarAndInputAndRestoresModes() {
    var chat = ChatScreenHarness()
    chat.receive(Fixtures.message("bye", from: Fixtures.bob))
    chat.type("unsent")
    chat.send(.finish)
    #expect(chat.log[9] == "  bob: bye")
    #expect(chat.screen[10] == "" && chat.lastRow == "")
    #expect(chat.cursor == (10, 0))
    #expect(chat.terminal.autowrap && chat.terminal.cursorVisible)
    #expect(chat.written.hasSuffix("\u{1B}[?2004l\u{1B}[?7h\u{1B}[?25h"))
  }

  @Test func countsFollowEventsAndSnapshots() {
    var chat = ChatScreenHarness()
    chat.receive(Fixtures.found(Fixtures.bob))
    chat.receive(.event(.connected(Fixtures.bob, PeerSecurity(verificationCode: "123456", isVerified: false))))
    #expect(chat.statusBar.hasSuffix("alice: 1 connected, 1 found"))
    chat.send(.roster(found: [Fixtures.bob, Fixtures.carol], connected: [], inviting: []))
    #expect(chat.statusBar.hasSuffix("alice: 0 connected, 2 found"))
    chat.receive(.ready(Fixtures.peer("alicia", 0xA11C1A), port: 1, service: .default))
    #expect(chat.statusBar.hasSuffix("alicia: 0 connected, 2 found"))
  }

  @Test func noColorWritesNoStyles() {
    var chat = ChatScreenHarness(color: false)
    chat.receive(Fixtures.message("hi", from: Fixtures.bob))
    chat.receive(.sent(id: 1, text: "yo", to: [Fixtures.bob], isPrivate: false))
    chat.receive(.settled(DeliveryReport(messageID: 1, recipients: 1, delivered: 1, failures: [])))
    chat.receive(Fixtures.message("psst", from: Fixtures.carol, isPrivate: true))
    chat.receive(.error("oops"))
    #expect(!containsSGR(chat.written))
  }

  @Test func colorsNamesDimsNoticesAndStylesErrors() {
    var chat = ChatScreenHarness(color: true)
    chat.receive(Fixtures.message("hi", from: Fixtures.bob))
    chat.receive(Fixtures.found(Fixtures.carol))
    chat.receive(.error("oops"))
    let bob = ChatLineStyler(me: Fixtures.alice).nameStyle(of: Fixtures.bob.id)
    #expect(chat.written.contains("\u{1B}[\(bob.parameters)mbob\u{1B}[0m"))
    #expect(bob.parameters.hasPrefix("1;38;5;"))
    #expect(chat.written.contains("] * found carol (12345678)\u{1B}[0m"))
    #expect(chat.written.contains("\u{1B}[1;31m! oops\u{1B}[0m"))
    #expect(chat.written.contains("\u{1B}[1;7m[1:all]\u{1B}[0m"), "the status bar is in reverse video")
  }

  @Test func tinyTerminalsDoNotBreak() {
    var chat = ChatScreenHarness(columns: 1, rows: 1)
    chat.type("日本 abc")
    chat.receive(Fixtures.message("hello", from: Fixtures.bob))
    chat.type(Keys.pageUp + Keys.alt("2"))
    chat.resize(columns: 3, rows: 2)
    chat.receive(Fixtures.message("psst", from: Fixtures.bob, isPrivate: true))
    chat.type(Keys.alt("2") + Keys.pageUp + Keys.home + Keys.ctrl("k"))
    chat.resize(columns: 5, rows: 3)
    #expect(chat.model.editor.isEmpty)
  }

  /// Whether the text has an SGR sequence (`ESC [ params m`).
  func containsSGR(_ text: String) -> Bool {
    let scalars = Array(text.unicodeScalars)
    for (index, scalar) in scalars.enumerated() where scalar == "\u{1B}" && index + 1 < scalars.count && scalars[index + 1] == "[" {
      var end = index + 2
      while end < scalars.count, ("0"..."9").contains(scalars[end]) || scalars[end] == ";" { end += 1 }
      if end < scalars.count, scalars[end] == "m" { return true }
    }
    return false
  }
}
