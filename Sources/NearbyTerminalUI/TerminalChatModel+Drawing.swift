import NearbyChat

extension TerminalChatModel {
  /// The input line laid out in rows, and where its cursor is in them.
  public struct InputView: Hashable, Sendable {
    public var rows: [StyledLine]
    /// 0-based, within `rows`.
    public var cursorRow: Int
    public var cursorColumn: Int
  }

  /// How the screen's rows are shared: the log on top, the status bar (when there are at
  /// least 3 rows), the input line at the bottom.
  struct ScreenLayout {
    var input: InputView
    var logRows: Int
    var hasStatusBar: Bool
    /// Rows of transfer bars: what is left after the input and the status bar, at most.
    var barRows: Int
  }

  /// The whole screen: every row top to bottom, and the cursor (1-based).
  public struct Frame: Hashable, Sendable {
    public var rows: [StyledLine]
    public var cursorRow: Int
    public var cursorColumn: Int
  }

  var screenLayout: ScreenLayout {
    let hasStatusBar = size.rows >= 3
    let input = inputView(maximumRows: max(1, size.rows - (hasStatusBar ? 2 : 1)))
    // A long input may take every row but the status bar's: the bars then give way (they
    // came on top, and the frame had more rows than the terminal).
    let bars = min(transferRowCount, max(0, size.rows - input.rows.count - (hasStatusBar ? 1 : 0)))
    return ScreenLayout(
      input: input, logRows: max(0, size.rows - input.rows.count - (hasStatusBar ? 1 : 0) - bars), hasStatusBar: hasStatusBar, barRows: bars)
  }

  /// What the log rows depend on, for the conversation shown.
  var logLayout: Conversation.Layout {
    Conversation.Layout(
      width: size.columns, height: screenLayout.logRows, today: LocalDay(now), term: shown.match == nil ? nil : searchTerm)
  }

  /// The screen as it should look now.
  public var frame: Frame {
    let layout = screenLayout
    var log = layout.logRows > 0 ? shown.visibleRows(logLayout) : []
    log = [StyledLine](repeating: StyledLine(), count: max(0, layout.logRows - log.count)) + log
    var rows = log + transferRows(layout.barRows)
    if layout.hasStatusBar { rows.append(statusBar) }
    rows += layout.input.rows
    let inputTop = size.rows - layout.input.rows.count + 1
    return Frame(rows: rows, cursorRow: inputTop + layout.input.cursorRow, cursorColumn: layout.input.cursorColumn + 1)
  }

  /// The prompt: the conversation a line goes to, or the question being asked.
  var prompt: StyledLine {
    switch mode {
    case .searching: return StyledLine("search: ", .bold)
    case .confirming(let lines): return StyledLine("send \(lines) lines? Enter sends, Esc edits> ", .attention)
    case .editing:
      var line = StyledLine("[", .dim)
      if let peer = shown.peer {
        line.append(EventFormatter.sanitize(shown.title), styler.nameStyle(of: peer.id))
      } else {
        line.append(shown.title, .bold)
      }
      line.append("] ", .dim)
      return line
    }
  }

  /// The prompt and the typed text wrapped at the terminal's width (a newline in the text
  /// starts a row). When it has more rows than `maximumRows`, only the rows around the
  /// cursor show.
  public func inputView(maximumRows: Int) -> InputView {
    var cells: [(Character, TextStyle)] = []
    for span in prompt.spans {
      for character in span.text { cells.append((character, span.style)) }
    }
    let promptCount = cells.count
    let typed: LineEditor
    if case .searching(let search) = mode { typed = search } else { typed = editor }
    for character in typed.characters { cells.append((character, .plain)) }
    var rows = [StyledLine()]
    var positions: [(row: Int, column: Int)] = []
    var column = 0
    for (character, style) in cells {
      if character == "\n" {
        positions.append((rows.count - 1, column))
        rows.append(StyledLine())
        column = 0
        continue
      }
      let width = DisplayWidth.of(character)
      if RowLayout.wraps(column: column, characterWidth: width, width: size.columns) {
        rows.append(StyledLine())
        column = 0
      }
      positions.append((rows.count - 1, column))
      rows[rows.count - 1].append(String(character), style)
      column += width
    }
    var end = (row: rows.count - 1, column: column)
    if column >= size.columns {
      rows.append(StyledLine())
      end = (rows.count - 1, 0)
    }
    let cursorIndex = promptCount + typed.cursor
    var cursor = cursorIndex < positions.count ? positions[cursorIndex] : end
    let visible = max(1, maximumRows)
    if rows.count > visible {
      let first = min(max(0, cursor.row - visible + 1), rows.count - visible)
      rows = Array(rows[first..<(first + visible)])
      cursor.row -= first
    }
    return InputView(rows: rows, cursorRow: cursor.row, cursorColumn: min(cursor.column, max(0, size.columns - 1)))
  }

  /// The input line as it is now, with all the rows it may take.
  public var inputView: InputView { screenLayout.input }

  /// Writes the rows that differ from what is on the screen, then puts the cursor into the
  /// input line.
  mutating func present(into screen: inout String) {
    let frame = self.frame
    let rows = frame.rows.map { $0.ansi(color: color) }
    if drawn.count != rows.count { drawn = [String?](repeating: nil, count: rows.count) }
    var out = ""
    for (index, row) in rows.enumerated() where drawn[index] != row {
      out += cursorTo(row: index + 1, column: 1) + "\u{1B}[2K" + row
      drawn[index] = row
    }
    let cursor = (row: frame.cursorRow, column: frame.cursorColumn)
    guard !out.isEmpty || cursor != drawnCursor else { return }
    screen += "\u{1B}[?25l" + out + cursorTo(row: cursor.row, column: cursor.column) + "\u{1B}[?25h"
    drawnCursor = cursor
  }
}
