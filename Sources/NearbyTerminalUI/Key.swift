/// A key press at the chat's input line, decoded from terminal bytes by ``KeyDecoder``.
public enum Key: Equatable, Sendable {
  /// Printable text: one typed character, or several at once when pasted.
  case text(String)
  /// Enter (CR or LF).
  case enter
  case tab
  /// Backspace or Ctrl-H: deletes the character before the cursor.
  case backspace
  /// Delete: deletes the character under the cursor.
  case delete
  /// Left arrow or Ctrl-B.
  case left
  /// Right arrow or Ctrl-F.
  case right
  /// Home or Ctrl-A.
  case home
  /// End or Ctrl-E.
  case end
  /// Alt-B, Ctrl-Left or Alt-Left.
  case wordLeft
  /// Alt-F, Ctrl-Right or Alt-Right.
  case wordRight
  /// Up arrow: the previous history entry.
  case up
  /// Down arrow: the next history entry.
  case down
  /// Text pasted while the terminal was in bracketed paste mode (or several lines that
  /// arrived at once): newlines are LF, tabs are spaces; never a key press of its own.
  case paste(String)
  /// Page Up, Page Down: scroll the conversation.
  case pageUp
  case pageDown
  /// Alt-1 … Alt-9, Alt-0: show conversation 1 … 10.
  case conversation(Int)
  /// Alt-Left or Ctrl-P.
  case previousConversation
  /// Alt-Right or Ctrl-N.
  case nextConversation
  /// Ctrl-R: search the conversation backwards (an older match).
  case searchBackward
  /// Ctrl-S: a newer match.
  case searchForward
  /// Escape (on its own) or Ctrl-G: cancel a search or a question.
  case escape
  /// Ctrl-U: deletes from the start of the line to the cursor.
  case killToStart
  /// Ctrl-K: deletes from the cursor to the end of the line.
  case killToEnd
  /// Ctrl-W or Alt-Backspace: deletes the word before the cursor.
  case killWordBackward
  /// Alt-D: deletes the word after the cursor.
  case killWordForward
  /// Ctrl-Y: inserts the text deleted last.
  case yank
  /// Ctrl-C.
  case interrupt
  /// Ctrl-D.
  case endOfInput
  /// Ctrl-L: redraws the screen.
  case redraw
  /// Ctrl-Z: suspends the program (back with `fg`).
  case suspend
}
