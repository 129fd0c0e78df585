import NearbyChat

extension StyledLine {
  /// The line broken into rows of at most `width` columns, the way a chat log reads: breaks
  /// fall between words (a word longer than a row is cut), the spaces at a break are dropped,
  /// a newline in the text starts a new row, and every row after the first starts with
  /// `indent` blank columns (a hanging indent under the text after the name).
  ///
  /// The indent is dropped when it would leave fewer than ``minimumWrapColumns`` for the
  /// text. An empty line is one empty row.
  public func wrapped(width: Int, indent: Int) -> [StyledLine] {
    let width = max(1, width)
    let indent = indent > 0 && width - indent >= Self.minimumWrapColumns ? indent : 0
    var cells: [(character: Character, style: TextStyle, width: Int)] = []
    for span in spans {
      for character in span.text { cells.append((character, span.style, character == "\n" ? 0 : DisplayWidth.of(character))) }
    }
    var rows: [StyledLine] = [StyledLine()]
    var column = 0
    var rowStart = 0  // the column where text starts on this row (after the indent)
    var afterBreak = false  // the row began at a soft break: leading spaces are dropped

    func newRow(soft: Bool) {
      rows.append(StyledLine(indent > 0 ? String(repeating: " ", count: indent) : ""))
      column = indent
      rowStart = indent
      afterBreak = soft
    }

    var index = 0
    while index < cells.count {
      let cell = cells[index]
      if cell.character == "\n" {
        newRow(soft: false)
        index += 1
        continue
      }
      if cell.character == " " {
        if afterBreak && column == rowStart {
          index += 1
          continue
        }
        if column + 1 > width {
          newRow(soft: true)
          index += 1
          continue
        }
        rows[rows.count - 1].append(" ", cell.style)
        column += 1
        index += 1
        continue
      }
      // A word: up to the next space or newline.
      var end = index
      var wordWidth = 0
      while end < cells.count, cells[end].character != " ", cells[end].character != "\n" {
        wordWidth += cells[end].width
        end += 1
      }
      if column + wordWidth > width && column > rowStart && indent + wordWidth <= width {
        newRow(soft: true)
      }
      for cell in cells[index..<end] {
        if column > rowStart && column + cell.width > width { newRow(soft: true) }
        rows[rows.count - 1].append(String(cell.character), cell.style)
        column += cell.width
      }
      afterBreak = false
      index = end
    }
    return rows
  }

  /// The fewest columns a hanging indent leaves for the text.
  public static let minimumWrapColumns = 20

  /// The line cut to `width` columns, ending in `…` when something was cut.
  public func truncated(to width: Int) -> StyledLine {
    guard self.width > width else { return self }
    guard width > 0 else { return StyledLine() }
    var result = StyledLine()
    var column = 0
    outer: for span in spans {
      for character in span.text {
        let characterWidth = DisplayWidth.of(character)
        if column + characterWidth > width - 1 { break outer }
        result.append(String(character), span.style)
        column += characterWidth
      }
    }
    result.append("…", spans.last?.style ?? .plain)
    return result
  }

  /// The line padded with spaces in `style` to `width` columns.
  public func padded(to width: Int, _ style: TextStyle) -> StyledLine {
    var result = self
    let missing = width - self.width
    if missing > 0 { result.append(String(repeating: " ", count: missing), style) }
    return result
  }

  /// The line with every occurrence of `term` (compared case-insensitively) in reverse video.
  public func highlighting(_ term: String) -> StyledLine {
    guard !term.isEmpty else { return self }
    let characters = spans.flatMap { span in span.text.map { ($0, span.style) } }
    let text = characters.map { String($0.0) }
    let lowered = text.map { $0.lowercased() }
    let needle = Array(term).map { String($0).lowercased() }
    var marked = [Bool](repeating: false, count: characters.count)
    var start = 0
    while start + needle.count <= characters.count {
      if Array(lowered[start..<(start + needle.count)]) == needle {
        for index in start..<(start + needle.count) { marked[index] = true }
        start += needle.count
      } else {
        start += 1
      }
    }
    var result = StyledLine()
    for (index, (character, style)) in characters.enumerated() {
      result.append(String(character), marked[index] ? style.reversed : style)
    }
    return result
  }
}
