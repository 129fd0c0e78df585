import NearbyChat

/// Every key of the terminal chat, for `/help keys` (the README's table says the same).
public enum KeyBindings {
  public static let all: [(keys: String, action: String)] = [
    ("Alt-1 … Alt-9, Alt-0", "show conversation 1 … 9, 10"),
    ("Alt-Left, Alt-Right, Ctrl-P, Ctrl-N", "the previous, the next conversation"),
    ("PgUp, PgDn", "scroll the conversation by a screen"),
    ("Home, End (input empty)", "the oldest lines; the newest, following new lines again"),
    ("Ctrl-R", "search the conversation: type, Ctrl-R older, Ctrl-S newer, Enter stays, Esc goes back"),
    ("Left, Right, Ctrl-B, Ctrl-F", "move by a character"),
    ("Alt-B, Alt-F, Ctrl-Left, Ctrl-Right", "move by a word"),
    ("Home, End, Ctrl-A, Ctrl-E", "start, end of the line"),
    ("Backspace, Delete", "delete before, under the cursor"),
    ("Ctrl-U, Ctrl-K", "delete to the start, to the end of the line"),
    ("Ctrl-W, Alt-D", "delete the word before, after the cursor"),
    ("Ctrl-Y", "insert what was deleted last"),
    ("Up, Down", "history (kept in the state directory)"),
    ("Tab", "complete a command, a peer name, or a name at the start (bob: ); twice: the choices"),
    ("(a paste)", "stays in the input line, newlines and all: Enter sends it as one message"),
    ("Enter", "send the line (more than 5 lines: asks first) or run the command"),
    ("Ctrl-C", "clear the line; on an empty line, leave"),
    ("Ctrl-D", "on an empty line, leave (otherwise delete under the cursor)"),
    ("Ctrl-L", "redraw the screen"),
    ("Ctrl-Z", "suspend (back with fg)"),
  ]

  /// The list, one key a line, the keys in a column.
  public static var helpText: String {
    let width = all.map { DisplayWidth.of($0.keys) }.max() ?? 0
    return all.map { $0.keys + String(repeating: " ", count: width - DisplayWidth.of($0.keys) + 2) + $0.action }.joined(separator: "\n")
  }
}
