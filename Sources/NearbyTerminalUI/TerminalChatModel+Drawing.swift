import NearbyChat

extension TerminalChatModel {
  /// The input line laid out in rows, and where its cursor is in them.
  public struct InputView: Hashable, Sendable {
    public var rows: [StyledLine]
    /// 0-based, within `rows`.
    public var cursorRow: Int
    public var cursorColumn: Int
  }

  /// The prompt and the typed text wrapped at the terminal's width. When it has more rows
  /// than the screen can give it (all but one row), only the rows around the cursor show.
  public var inputView: InputView {
    var spans: [(Character, TextStyle)] = []
    for span in prompt.spans {
      for character in span.text { spans.append((character, span.style)) }
    }
    let promptCount = spans.count
    for character in editor.characters { spans.append((character, .plain)) }
    let (positions, end) = RowLayout.place(spans.map { DisplayWidth.of($0.0) }, width: size.columns)
    var rows = [StyledLine](repeating: StyledLine(), count: end.row + 1)
    for (index, (character, style)) in spans.enumerated() {
      rows[positions[index].row].append(String(character), style)
    }
    let cursorIndex = promptCount + editor.cursor
    var cursor = cursorIndex < positions.count ? positions[cursorIndex] : end
    let visible = max(1, size.rows - 1)
    if rows.count > visible {
      let first = min(max(0, cursor.row - visible + 1), rows.count - visible)
      rows = Array(rows[first..<(first + visible)])
      cursor.row -= first
    }
    return InputView(rows: rows, cursorRow: cursor.row, cursorColumn: cursor.column)
  }

  /// Draws new entries above the input line and redraws the input line.
  ///
  /// From the top row of the input line as drawn before, the screen is cleared and the new
  /// entries' rows and then the input rows are written, one CR LF between rows: the
  /// terminal scrolls exactly as far as needed and the input ends on the bottom row. If the
  /// input shrank by more rows than there are new ones, the screen is repainted instead
  /// (otherwise blank rows would stay between the lines and the input).
  mutating func draw(appending new: [ScreenEntry], into screen: inout String) {
    remember(new)
    let view = inputView
    let newRows = new.flatMap { $0.line.rows(width: size.columns) }
    if newRows.count + view.rows.count < drawnInputRows {
      repaint(into: &screen)
      return
    }
    screen += "\u{1B}[?25l" + cursorTo(row: size.rows - drawnInputRows + 1, column: 1) + "\u{1B}[J"
    for (index, row) in (newRows + view.rows).enumerated() {
      if index > 0 { screen += "\r\n" }
      screen += "\u{1B}[2K" + row.ansi(color: color)
    }
    place(view, into: &screen)
  }

  /// Repaints every row: the newest entries that fit, then the input line.
  mutating func repaint(into screen: inout String) {
    let view = inputView
    let room = max(0, size.rows - view.rows.count)
    var rows: [StyledLine] = []
    for entry in entries.reversed() {
      if rows.count >= room { break }
      rows.insert(contentsOf: entry.line.rows(width: size.columns), at: 0)
    }
    rows = Array(rows.suffix(room))
    rows = [StyledLine](repeating: StyledLine(), count: room - rows.count) + rows + view.rows
    screen += "\u{1B}[?25l\u{1B}[?7l"
    for (index, row) in rows.enumerated() {
      screen += cursorTo(row: index + 1, column: 1) + "\u{1B}[2K" + row.ansi(color: color)
    }
    place(view, into: &screen)
  }

  /// Puts the cursor into the input line drawn on the bottom rows and shows it.
  private mutating func place(_ view: InputView, into screen: inout String) {
    drawnInputRows = view.rows.count
    cursorPosition = (size.rows - view.rows.count + 1 + view.cursorRow, view.cursorColumn + 1)
    screen += cursorTo(row: cursorPosition.row, column: cursorPosition.column) + "\u{1B}[?25h"
  }

  /// Changes the delivery mark of an own message, and on the screen if it is still there.
  mutating func mark(serial: Int, _ mark: DeliveryMark, into screen: inout String) {
    let index = serial - droppedEntries
    guard entries.indices.contains(index), entries[index].line.spans.count > 1 else { return }
    entries[index].line.spans[1] = mark.span
    guard ChatLineStyler.markColumn < size.columns else { return }
    var rowsBelow = 0  // from the entry's first row down to the input line
    for entry in entries[index...] {
      rowsBelow += entry.line.rows(width: size.columns).count
      if rowsBelow > size.rows { return }
    }
    let row = size.rows - drawnInputRows - rowsBelow + 1
    guard row >= 1 else { return }
    screen += "\u{1B}[?25l" + cursorTo(row: row, column: ChatLineStyler.markColumn + 1) + StyledLine([mark.span]).ansi(color: color)
    screen += cursorTo(row: cursorPosition.row, column: cursorPosition.column) + "\u{1B}[?25h"
  }

  func cursorTo(row: Int, column: Int) -> String { "\u{1B}[\(row);\(column)H" }
}
