import NearbyChat
import NearbyCore
import Testing

@testable import NearbyTerminalUI

/// Pasting several lines: they stay in the input line, newlines and all, and Enter sends
/// them as one message (asking first above five lines); never one message a line.
@Suite struct PasteTests {
  @Test func aBracketedPasteStaysInTheInputAndEnterSendsOneMessage() {
    var chat = ChatScreenHarness()
    chat.type(Keys.paste("one\r\ntwo\nthree"))
    #expect(chat.takeSubmitted() == [])
    #expect(chat.screen.suffix(3) == ["[all] one", "two", "three"])
    #expect(chat.cursor == (11, 5))
    chat.type(Keys.enter)
    #expect(chat.takeSubmitted() == ["one\ntwo\nthree"])
    #expect(chat.effects.isEmpty, "a line of several rows is not kept in the history file")
    chat.type(Keys.up)
    #expect(chat.model.editor.text == "one\ntwo\nthree", "but Up brings it back")
  }

  @Test func moreThanFiveLinesAskFirst() {
    var chat = ChatScreenHarness()
    let text = (1...7).map { "row \($0)" }.joined(separator: "\n")
    chat.type(Keys.paste(text))
    chat.type(Keys.enter)
    #expect(chat.takeSubmitted() == [])
    #expect(chat.model.inputView.rows[0].plain.hasPrefix("send 7 lines? Enter sends, Esc edits> row 1"))
    chat.type("\u{1B}")
    chat.send(.escapeTimeout)
    #expect(chat.model.mode == .editing)
    #expect(chat.model.editor.text == text)
    chat.type(Keys.enter)
    chat.type(Keys.enter)
    #expect(chat.takeSubmitted() == [text])
  }

  @Test func aPasteStartingWithASlashIsAMessage() {
    var chat = ChatScreenHarness()
    chat.type(Keys.paste("/usr/bin\n/etc"))
    chat.type(Keys.enter)
    #expect(chat.takeSubmitted() == ["//usr/bin\n/etc"])
  }

  @Test func aPasteInAPeerConversationIsOnePrivateMessage() {
    var chat = ChatScreenHarness()
    chat.send(.roster(found: [], connected: [Fixtures.bob], inviting: []))
    chat.type("/query bob\r")
    chat.type(Keys.paste("a\nb"))
    chat.type(Keys.enter)
    #expect(chat.takeSubmitted() == ["/msg \(Fixtures.bob.id.hex) a\nb"])
  }

  @Test func linesArrivingTogetherWithoutBracketedPasteAreNotSent() {
    var chat = ChatScreenHarness()
    chat.type("first\rsecond\rthird\r")
    #expect(chat.takeSubmitted() == [])
    #expect(chat.model.editor.text == "first\nsecond\nthird\n")
    chat.type(Keys.enter)
    #expect(chat.takeSubmitted() == ["first\nsecond\nthird\n"])
  }

  @Test func aMessageWithNewlinesShowsThemUnderTheName() {
    var chat = ChatScreenHarness()
    chat.receive(Fixtures.message("one\ntwo\n  indented", from: Fixtures.bob))
    #expect(chat.logContent == ["  bob: one", String(repeating: " ", count: 18) + "two", String(repeating: " ", count: 18) + "  indented"])
  }
}
