import NearbyChat
import NearbyCore
import Testing

@testable import NearbyTerminalUI

/// The terminal chat model driven with key bytes and chat lines, checked on a virtual
/// screen: what stays on it, where the cursor is, what goes to the chat.
@Suite struct TerminalChatModelTests {
  static let prompt = "alice (0 connected, 0 found)> "

  @Test func startPutsThePromptOnTheBottomRow() {
    let chat = ChatScreenHarness()
    #expect(chat.lastRow == "alice (0 connected, 0 found)>")
    #expect(chat.cursor == (11, 30))
    #expect(!chat.terminal.autowrap)
    #expect(chat.terminal.cursorVisible)
  }

  @Test func typingMovesTheCursorByDisplayWidth() {
    var chat = ChatScreenHarness()
    chat.type("héllo 日本 bo")
    #expect(chat.lastRow == Self.prompt + "héllo 日本 bo")
    #expect(chat.cursor.column == 30 + 13)
    chat.type(Keys.left + Keys.left + Keys.left)
    #expect(chat.cursor.column == 30 + 10)
    chat.type(Keys.left)
    #expect(chat.cursor.column == 30 + 8)
    chat.type(Keys.home)
    #expect(chat.cursor.column == 30)
    chat.type(Keys.ctrl("e"))
    #expect(chat.cursor.column == 43)
  }

  @Test func anArrivingMessageGoesAboveAHalfTypedLine() {
    var chat = ChatScreenHarness()
    chat.type("héllo 日本 bo")
    chat.type(Keys.left + Keys.left + Keys.left)  // the cursor right after 日本
    chat.receive(Fixtures.message("hi alice", from: Fixtures.bob))
    #expect(ChatScreenHarness.untimed(chat.screen[10]) == "  bob: hi alice")
    #expect(chat.lastRow == Self.prompt + "héllo 日本 bo")
    #expect(chat.cursor == (11, 30 + 10))
    chat.type("!")
    #expect(chat.lastRow == Self.prompt + "héllo 日本! bo")
    #expect(chat.model.editor.text == "héllo 日本! bo")
  }

  @Test func manyArrivingLinesScrollAndKeepTheInput() {
    var chat = ChatScreenHarness()
    chat.type("draft")
    for index in 1...30 { chat.receive(Fixtures.message("line \(index)", from: Fixtures.bob)) }
    let rows = chat.screen.map(ChatScreenHarness.untimed)
    #expect(rows[0] == "  bob: line 20")
    #expect(rows[10] == "  bob: line 30")
    #expect(chat.lastRow == Self.prompt + "draft")
    #expect(chat.terminal.history.map(ChatScreenHarness.untimed).suffix(2) == ["  bob: line 18", "  bob: line 19"])
  }

  @Test func wideCharactersWrapWhole() {
    var chat = ChatScreenHarness(columns: 20, rows: 6)
    chat.type("日本語日本語")
    #expect(chat.screen[4] == "alice 0/0> 日本語日")
    #expect(chat.screen[5] == "本語")
    #expect(chat.cursor == (5, 4))
    chat.receive(Fixtures.message("yo", from: Fixtures.bob))
    #expect(ChatScreenHarness.untimed(chat.screen[3]) == "  bob: yo")
    #expect(chat.screen[4] == "alice 0/0> 日本語日")
    #expect(chat.screen[5] == "本語")
  }

  @Test func aLineLongerThanTheTerminalWrapsAndSurvivesArrivals() {
    var chat = ChatScreenHarness(columns: 30, rows: 10)
    let text = String(repeating: "abcdefghij", count: 10)
    chat.type(text)
    #expect(chat.screen[6...].joined() == "alice 0/0> " + text)
    #expect(chat.cursor == (9, 21))
    chat.receive(Fixtures.message("hello", from: Fixtures.bob))
    let digits = "0123456789012345678901234567890"
    chat.receive(Fixtures.message(digits, from: Fixtures.bob))
    #expect(chat.screen[6...].joined() == "alice 0/0> " + text)
    #expect(chat.cursor == (9, 21))
    #expect(ChatScreenHarness.untimed(chat.screen[3]) == "  bob: hello")
    #expect(ChatScreenHarness.untimed(chat.screen[4] + chat.screen[5]) == "  bob: " + digits)
    chat.type(Keys.enter)
    #expect(chat.takeSubmitted() == [text])
    // The input shrank to one row: no blank rows stay between the lines and the prompt.
    #expect(chat.lastRow == "alice 0/0>")
    #expect(ChatScreenHarness.untimed(chat.screen[7] + chat.screen[8]) == "  bob: " + digits)
    #expect(ChatScreenHarness.untimed(chat.screen[6]) == "  bob: hello")
  }

  @Test func inputTallerThanTheScreenShowsTheRowsAroundTheCursor() {
    var chat = ChatScreenHarness(columns: 20, rows: 5)
    chat.type(String(repeating: "x", count: 200))
    #expect(chat.model.inputView.rows.count == 4)
    #expect(chat.cursor.row == 4)
    chat.type(Keys.home)
    #expect(chat.screen[1].hasPrefix("alice 0/0> "))
    #expect(chat.cursor == (1, 11))
  }

  @Test func resizeRepaintsEverything() {
    var chat = ChatScreenHarness(columns: 60, rows: 12)
    chat.receive(Fixtures.message("a message long enough to wrap at thirty columns", from: Fixtures.bob))
    chat.receive(Fixtures.message("short", from: Fixtures.bob))
    chat.type("typing 日本 here")
    chat.resize(columns: 30, rows: 8)
    #expect(chat.screen.allSatisfy { DisplayWidth.of($0) <= 30 })
    #expect(chat.lastRow == "alice 0/0> typing 日本 here")
    #expect(ChatScreenHarness.untimed(chat.screen[3]) == "  bob: a message lo")
    #expect(chat.screen[4] == "ng enough to wrap at thirty co")
    #expect(chat.screen[5] == "lumns")
    #expect(ChatScreenHarness.untimed(chat.screen[6]) == "  bob: short")
    #expect(chat.screen[0...2].allSatisfy { $0.isEmpty })
    #expect(chat.cursor == (7, 27))
    chat.resize(columns: 100, rows: 20)
    #expect(chat.lastRow == Self.prompt + "typing 日本 here")
    #expect(ChatScreenHarness.untimed(chat.screen[18]) == "  bob: short")
    #expect(ChatScreenHarness.untimed(chat.screen[17]) == "  bob: a message long enough to wrap at thirty columns")
    #expect(chat.cursor == (19, 46))
  }

  @Test func ownMessagesGetADeliveryMark() {
    var chat = ChatScreenHarness()
    chat.receive(.sent(id: 5, text: "hello", to: [Fixtures.bob, Fixtures.carol], isPrivate: false))
    #expect(ChatScreenHarness.untimed(chat.screen[10]) == ". alice: hello")
    chat.type("half")
    chat.receive(.event(.delivered(messageID: 5, to: Fixtures.bob)))
    #expect(ChatScreenHarness.untimed(chat.screen[10]) == ". alice: hello")
    chat.receive(.event(.delivered(messageID: 5, to: Fixtures.carol)))
    #expect(ChatScreenHarness.untimed(chat.screen[10]) == ". alice: hello", "the session says when every recipient answered")
    chat.receive(.settled(DeliveryReport(messageID: 5, recipients: 2, delivered: 2, failures: [])))
    #expect(ChatScreenHarness.untimed(chat.screen[10]) == "✓ alice: hello")
    #expect(chat.lastRow == Self.prompt + "half")
    #expect(chat.cursor == (11, 34))
    // No line for the delivery itself.
    #expect(chat.model.entries.count == 1)
  }

  @Test func aMarkIsUpdatedWhereTheLineIsNow() {
    var chat = ChatScreenHarness()
    chat.receive(.sent(id: 5, text: "hello", to: [Fixtures.bob], isPrivate: false))
    chat.receive(Fixtures.message("one", from: Fixtures.bob))
    chat.receive(Fixtures.message(String(repeating: "two ", count: 20), from: Fixtures.bob))
    let before = chat.screen
    chat.receive(.event(.delivered(messageID: 5, to: Fixtures.bob)))
    chat.receive(.settled(DeliveryReport(messageID: 5, recipients: 1, delivered: 1, failures: [])))
    #expect(ChatScreenHarness.untimed(chat.screen[7]) == "✓ alice: hello")
    for row in chat.screen.indices where row != 7 { #expect(chat.screen[row] == before[row]) }
  }

  @Test func aMarkOffTheScreenChangesOnlyTheKeptLine() {
    var chat = ChatScreenHarness(rows: 5)
    chat.receive(.sent(id: 5, text: "hello", to: [Fixtures.bob], isPrivate: false))
    for index in 1...6 { chat.receive(Fixtures.message("\(index)", from: Fixtures.bob)) }
    let before = chat.screen
    chat.receive(.event(.delivered(messageID: 5, to: Fixtures.bob)))
    chat.receive(.settled(DeliveryReport(messageID: 5, recipients: 1, delivered: 1, failures: [])))
    #expect(chat.screen == before)
    #expect(chat.model.entries[0].line.plain.contains("✓ alice: hello"))
  }

  @Test func anUndeliveredMessageIsMarkedAndExplained() {
    var chat = ChatScreenHarness(columns: 100)
    chat.receive(.sent(id: 6, text: "are you there", to: [Fixtures.bob], isPrivate: true))
    chat.receive(.event(.error(.undelivered(messageID: 6, peer: Fixtures.bob, peerID: Fixtures.bob.id, reason: .notConnected))))
    #expect(ChatScreenHarness.untimed(chat.screen[9]) == "✗ alice -> bob: are you there")
    #expect(ChatScreenHarness.untimed(chat.screen[10]).hasPrefix("! message 6 to bob (12345678) not delivered: not connected"))
  }

  @Test func invitationsAreNoticesThatLeaveTheInputAlone() {
    var chat = ChatScreenHarness(columns: 100)
    chat.type("hel")
    chat.receive(Fixtures.invitation(from: Fixtures.bob, context: "lunch?"))
    #expect(
      ChatScreenHarness.untimed(chat.screen[10]) == "* bob (12345678) invites you (context: lunch?) — /accept bob or /decline bob")
    #expect(chat.lastRow == "alice (0 connected, 0 found, 1 invitation)> hel")
    #expect(chat.model.editor.text == "hel")
  }

  @Test func finishClearsTheInputAndRestoresModes() {
    var chat = ChatScreenHarness()
    chat.receive(Fixtures.message("bye", from: Fixtures.bob))
    chat.type("unsent")
    chat.send(.finish)
    #expect(ChatScreenHarness.untimed(chat.screen[10]) == "  bob: bye")
    #expect(chat.lastRow == "")
    #expect(chat.cursor == (11, 0))
    #expect(chat.terminal.autowrap && chat.terminal.cursorVisible)
  }

  @Test func promptCountsFollowEventsAndSnapshots() {
    var chat = ChatScreenHarness()
    chat.receive(Fixtures.found(Fixtures.bob))
    chat.receive(.event(.connected(Fixtures.bob, PeerSecurity(verificationCode: "123456", isVerified: false))))
    #expect(chat.lastRow == "alice (1 connected, 1 found)>")
    chat.send(.roster(found: [Fixtures.bob, Fixtures.carol], connected: [], inviting: []))
    #expect(chat.lastRow == "alice (0 connected, 2 found)>")
    chat.receive(.ready(Fixtures.peer("alicia", 0xA11C1A), port: 1, service: .default))
    #expect(chat.lastRow == "alicia (0 connected, 2 found)>")
  }

  @Test func noColorWritesNoStyles() {
    var chat = ChatScreenHarness(color: false)
    chat.receive(Fixtures.message("hi", from: Fixtures.bob))
    chat.receive(.sent(id: 1, text: "yo", to: [Fixtures.bob], isPrivate: false))
    chat.receive(.event(.delivered(messageID: 1, to: Fixtures.bob)))
    chat.receive(.error("oops"))
    #expect(!containsSGR(chat.written))
  }

  @Test func colorsNamesDimsNoticesAndStylesErrors() {
    var chat = ChatScreenHarness(color: true)
    chat.receive(Fixtures.message("hi", from: Fixtures.bob))
    chat.receive(Fixtures.found(Fixtures.carol))
    chat.receive(.error("oops"))
    #expect(chat.written.contains("\u{1B}[1;\(ChatLineStyler.color(of: Fixtures.bob.id))mbob\u{1B}[0m"))
    #expect(chat.written.contains("] * found carol (12345678) at carol.local. \u{1B}[0m"))
    #expect(chat.written.contains("\u{1B}[1;31m! oops\u{1B}[0m"))
    #expect(chat.lastRow == "alice (0 connected, 1 found)>")
  }

  @Test func tinyTerminalsDoNotBreak() {
    var chat = ChatScreenHarness(columns: 1, rows: 1)
    chat.type("日本 abc")
    chat.receive(Fixtures.message("hello", from: Fixtures.bob))
    chat.resize(columns: 3, rows: 2)
    chat.type(Keys.home + Keys.ctrl("k"))
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
