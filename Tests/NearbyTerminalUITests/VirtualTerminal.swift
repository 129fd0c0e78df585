import NearbyChat
import NearbyTerminalUI

/// A small terminal emulator for the tests: enough of a VT100 (cursor positioning, erase,
/// scrolling into a history, autowrap on and off, wide characters) to check what the chat
/// leaves on the screen, the way `tmux capture-pane` does in the end-to-end test.
struct VirtualTerminal {
  private(set) var columns: Int
  private(set) var rows: Int
  /// Cells; the right half of a wide character is "".
  private(set) var grid: [[String]]
  private(set) var row = 0
  private(set) var column = 0
  /// Lines scrolled off the top, oldest first.
  private(set) var history: [String] = []
  private(set) var autowrap = true
  private(set) var cursorVisible = true
  private(set) var bells = 0
  private var pendingWrap = false
  private var pending: [Character] = []

  init(columns: Int, rows: Int) {
    self.columns = columns
    self.rows = rows
    grid = Array(repeating: Array(repeating: " ", count: columns), count: rows)
  }

  /// The screen's rows, trailing spaces removed.
  var lines: [String] { grid.map(Self.text) }

  /// The screen's rows without the blank ones at the top and bottom.
  var content: [String] {
    var result = lines
    while result.first == "" { result.removeFirst() }
    while result.last == "" { result.removeLast() }
    return result
  }

  static func text(_ cells: [String]) -> String {
    var line = cells.joined()
    while line.hasSuffix(" ") { line.removeLast() }
    return line
  }

  mutating func write(_ text: String) {
    for scalar in text.unicodeScalars { feed(scalar) }
    flushPrintable()
  }

  /// Resizes like xterm: rows cut off at the top go to the history (keeping the cursor's row
  /// on screen), columns are cut or padded, nothing is reflowed.
  mutating func resize(columns newColumns: Int, rows newRows: Int) {
    while grid.count > newRows && row > 0 {
      history.append(Self.text(grid.removeFirst()))
      row -= 1
    }
    while grid.count > newRows { grid.removeLast() }
    while grid.count < newRows { grid.append(Array(repeating: " ", count: newColumns)) }
    grid = grid.map { cells in
      cells.count >= newColumns ? Array(cells.prefix(newColumns)) : cells + Array(repeating: " ", count: newColumns - cells.count)
    }
    columns = newColumns
    rows = newRows
    row = min(row, rows - 1)
    column = min(column, columns - 1)
    pendingWrap = false
  }

  // Printable scalars are collected and put as grapheme clusters, the way terminals that
  // follow Unicode combine them.
  private var printable = ""

  private mutating func flushPrintable() {
    let text = printable
    printable = ""
    for character in text { put(character) }
  }

  private mutating func feed(_ scalar: Unicode.Scalar) {
    if !pending.isEmpty {
      pending.append(Character(scalar))
      finishEscapeIfComplete()
      return
    }
    if scalar.value >= 0x20 && scalar.value != 0x7F {
      printable.unicodeScalars.append(scalar)
      return
    }
    flushPrintable()
    switch scalar {
    case "\u{1B}": pending = [Character(scalar)]
    case "\r":
      column = 0
      pendingWrap = false
    case "\n": lineFeed()
    case "\u{7}": bells += 1
    default: break
    }
  }

  private mutating func lineFeed() {
    pendingWrap = false
    if row == rows - 1 {
      history.append(Self.text(grid.removeFirst()))
      grid.append(Array(repeating: " ", count: columns))
    } else {
      row += 1
    }
  }

  private mutating func put(_ character: Character) {
    let width = DisplayWidth.of(character)
    if width == 0 {
      grid[row][max(0, column - 1)] += String(character)
      return
    }
    if pendingWrap && autowrap {
      column = 0
      lineFeed()
    }
    pendingWrap = false
    if column + width > columns {
      if autowrap {
        column = 0
        lineFeed()
      } else {
        column = max(0, columns - width)
      }
    }
    grid[row][column] = String(character)
    if width == 2, column + 1 < columns { grid[row][column + 1] = "" }
    column += width
    if column >= columns {
      column = columns - 1
      pendingWrap = autowrap
    }
  }

  private mutating func finishEscapeIfComplete() {
    guard pending.count >= 2 else { return }
    guard pending[1] == "[" else {
      pending = []  // two-character escapes: the chat does not use them
      return
    }
    guard pending.count > 2, let last = pending.last, let value = last.asciiValue, (0x40...0x7E).contains(value) else { return }
    let body = String(pending[2..<(pending.count - 1)])
    pending = []
    csi(body, final: last)
  }

  private mutating func csi(_ body: String, final: Character) {
    let isPrivate = body.hasPrefix("?")
    let numbers = (isPrivate ? String(body.dropFirst()) : body).split(separator: ";", omittingEmptySubsequences: false).map { Int($0) }
    func number(_ index: Int, _ fallback: Int) -> Int { index < numbers.count ? numbers[index] ?? fallback : fallback }
    pendingWrap = false
    switch final {
    case "H":
      row = min(rows, max(1, number(0, 1))) - 1
      column = min(columns, max(1, number(1, 1))) - 1
    case "A": row = max(0, row - number(0, 1))
    case "B": row = min(rows - 1, row + number(0, 1))
    case "C": column = min(columns - 1, column + number(0, 1))
    case "D": column = max(0, column - number(0, 1))
    case "G": column = min(columns, max(1, number(0, 1))) - 1
    case "J":
      if number(0, 0) >= 2 {
        grid = Array(repeating: Array(repeating: " ", count: columns), count: rows)
      } else {
        for c in column..<columns { grid[row][c] = " " }
        for r in (row + 1)..<rows { grid[r] = Array(repeating: " ", count: columns) }
      }
    case "K":
      switch number(0, 0) {
      case 2: grid[row] = Array(repeating: " ", count: columns)
      case 1: for c in 0...column { grid[row][c] = " " }
      default: for c in column..<columns { grid[row][c] = " " }
      }
    case "h", "l":
      if isPrivate && number(0, 0) == 7 { autowrap = final == "h" }
      if isPrivate && number(0, 0) == 25 { cursorVisible = final == "h" }
    default:
      break  // SGR and the rest do not move anything
    }
  }
}
