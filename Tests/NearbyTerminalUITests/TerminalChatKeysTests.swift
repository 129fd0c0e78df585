import NearbyChat
import NearbyCore
import Testing

@testable import NearbyTerminalUI

/// The keys of the terminal chat: editing, history, completion, Enter, and the ways out.
@Suite struct TerminalChatKeysTests {
  static let prompt = TerminalChatModelTests.prompt

  @Test func enterSubmitsEchoesCommandsAndRemembers() {
    var chat = ChatScreenHarness()
    chat.type("/peers\r")
    chat.type("hello bob\r")
    chat.type("\r")
    #expect(chat.takeSubmitted() == ["/peers", "hello bob"])
    #expect(chat.effects == [.remember("/peers"), .remember("hello bob")])
    #expect(chat.log[9] == "> /peers")
    #expect(chat.lastRow == "[all]")
  }

  @Test func historyUpAndDown() {
    var chat = ChatScreenHarness(history: ["from last time"])
    chat.type("one\r")
    chat.type("two\r")
    chat.type("dra")
    chat.type(Keys.up)
    #expect(chat.model.editor.text == "two")
    chat.type(Keys.up + Keys.up)
    #expect(chat.model.editor.text == "from last time")
    #expect(chat.lastRow == Self.prompt + "from last time")
    chat.type(Keys.up)
    #expect(chat.model.editor.text == "from last time")
    chat.type(Keys.down + Keys.down + Keys.down)
    #expect(chat.model.editor.text == "dra")
    #expect(chat.cursor.column == 9)
  }

  @Test func editingKeysOnTheScreen() {
    var chat = ChatScreenHarness()
    chat.type("one two three")
    chat.type(Keys.ctrlLeft + Keys.ctrl("k"))
    #expect(chat.lastRow == Self.prompt + "one two")
    chat.type(Keys.altB + Keys.ctrl("w"))
    #expect(chat.model.editor.text == "two ")
    chat.type(Keys.ctrl("y") + Keys.end + Keys.backspace + Keys.home + Keys.delete)
    #expect(chat.model.editor.text == "ne two")
    chat.type(Keys.altF + Keys.ctrl("u"))
    #expect(chat.lastRow == Self.prompt + " two")
    #expect(chat.cursor.column == 6)
  }

  @Test func tabCompletesCommandsAndPeers() {
    var chat = ChatScreenHarness()
    chat.receive(Fixtures.found(Fixtures.bob))
    chat.receive(Fixtures.found(Fixtures.carol))
    chat.receive(Fixtures.found(Fixtures.peer("carl", 0xCA21)))
    chat.type("/inv\t")
    #expect(chat.model.editor.text == "/invit")
    chat.type("e b\t")
    #expect(chat.model.editor.text == "/invite bob ")
    chat.type(Keys.ctrl("u") + "/msg ca\t")
    #expect(chat.model.editor.text == "/msg car")
    chat.type("\t")
    #expect(chat.log[9] == "* carl  carol")
    #expect(chat.lastRow == "[all] /msg car")
    chat.type(Keys.ctrl("u") + "/zz\t")
    #expect(chat.terminal.bells == 1)
  }

  @Test func ctrlCClearsThenLeavesThenLeavesAtOnce() {
    var chat = ChatScreenHarness()
    chat.type("abc")
    chat.type(Keys.ctrl("c"))
    #expect(chat.model.editor.isEmpty)
    #expect(chat.effects.isEmpty)
    chat.type(Keys.ctrl("c"))
    #expect(chat.effects == [.quit])
    #expect(chat.log[9].hasPrefix("* leaving"))
    chat.type("typing is ignored now")
    #expect(chat.model.editor.isEmpty)
    chat.type(Keys.ctrl("c"))
    #expect(chat.effects == [.quit, .forceQuit])
  }

  @Test func ctrlDDeletesOrLeaves() {
    var chat = ChatScreenHarness()
    chat.type("ab" + Keys.home + Keys.ctrl("d"))
    #expect(chat.model.editor.text == "b")
    #expect(chat.effects.isEmpty)
    chat.type(Keys.ctrl("d") + Keys.ctrl("d"))
    #expect(chat.effects == [.quit])
  }

  @Test func quitCommandLeaves() {
    var chat = ChatScreenHarness()
    chat.type("/quit\r")
    #expect(chat.takeSubmitted() == ["/quit"])
    #expect(chat.model.isQuitting)
  }

  @Test func escapeAloneDoesNothing() {
    var chat = ChatScreenHarness()
    chat.type(bytes: [0x1B])
    #expect(chat.model.isWaitingForKeys)
    chat.send(.escapeTimeout)
    chat.type("x")
    #expect(chat.model.editor.text == "x")
  }

  @Test func ctrlZSuspendsAndCtrlLRepaints() {
    var chat = ChatScreenHarness()
    chat.receive(Fixtures.message("kept", from: Fixtures.bob))
    chat.type("abc")
    let before = chat.screen
    chat.type(Keys.ctrl("z"))
    #expect(chat.effects == [.suspend])
    chat.type(Keys.ctrl("l"))
    #expect(chat.screen.suffix(2) == before.suffix(2))
    #expect(chat.cursor == (11, 9))
  }
}
