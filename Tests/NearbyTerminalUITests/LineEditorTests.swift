import NearbyChat
import NearbyTerminalUI
import Testing

@Suite struct LineEditorTests {
  @Test func insertAndMove() {
    var editor = LineEditor()
    editor.insert("hello")
    #expect(editor.text == "hello" && editor.cursor == 5)
    editor.moveLeft()
    editor.moveLeft()
    editor.insert("XY")
    #expect(editor.text == "helXYlo" && editor.cursor == 5)
    editor.moveHome()
    #expect(editor.cursor == 0)
    editor.moveLeft()
    #expect(editor.cursor == 0)
    editor.moveEnd()
    editor.moveRight()
    #expect(editor.cursor == 7)
  }

  @Test func multiByteAndWideCharactersAreOneStep() {
    var editor = LineEditor("a日本é😀")
    #expect(editor.characters.count == 5)
    editor.moveLeft()
    editor.deleteBackward()
    #expect(editor.text == "a日本😀")
    editor.moveHome()
    editor.moveRight()
    editor.deleteForward()
    #expect(editor.text == "a本😀")
  }

  @Test func combiningMarkJoinsItsBase() {
    var editor = LineEditor("e")
    editor.insert("\u{301}")
    #expect(editor.characters.count == 1)
    #expect(editor.cursor == 1)
  }

  @Test func kills() {
    var editor = LineEditor("one two three")
    editor.moveWordLeft()
    editor.killToEnd()
    #expect(editor.text == "one two " && editor.killed == "three")
    editor.killWordBackward()
    #expect(editor.text == "one " && editor.killed == "two ")
    editor.yank()
    #expect(editor.text == "one two ")
    editor.moveLeft()
    editor.moveLeft()
    editor.killToStart()
    #expect(editor.text == "o " && editor.cursor == 0 && editor.killed == "one tw")
  }

  @Test func wordMoves() {
    var editor = LineEditor("/msg bob hello, world")
    editor.moveWordLeft()
    #expect(editor.cursor == 16)
    editor.moveWordLeft()
    #expect(editor.cursor == 9)
    editor.moveWordLeft()
    editor.moveWordLeft()
    #expect(editor.cursor == 1)
    editor.moveWordRight()
    #expect(editor.cursor == 4)
    editor.killWordForward()
    #expect(editor.text == "/msg hello, world")
  }

  @Test func deleteAtEdgesIsRefused() {
    var editor = LineEditor()
    let deleted = [editor.deleteBackward(), editor.deleteForward()]
    #expect(deleted == [false, false])
  }

  @Test func lengthIsCapped() {
    var editor = LineEditor(maximumBytes: 8)
    editor.insert("abcdef日本")
    #expect(editor.text == "abcdef")
    let inserted = [editor.insert("日"), editor.insert("xy")]
    #expect(inserted == [false, true])
    #expect(editor.text.utf8.count == 8)
  }
}
