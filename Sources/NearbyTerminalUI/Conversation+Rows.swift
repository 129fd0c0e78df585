import NearbyChat

extension Conversation {
  /// What the rows of the log depend on besides the entries.
  struct Layout {
    var width: Int
    /// The rows the log has on the screen.
    var height: Int
    /// Today (the first line of a log from another day gets a day line).
    var today: LocalDay
    /// The search term whose matches are highlighted in the matching entry.
    var term: String?
  }

  /// The rows entry `serial` takes: the unread marker before it (if it is the first unread
  /// line), a line for the day when the day changed since the entry before, and its text
  /// wrapped with its hanging indent.
  func rows(of serial: Int, _ layout: Layout) -> [StyledLine] {
    var rows: [StyledLine] = []
    let entry = self[serial]
    if markerBefore == serial { rows.append(Self.rule("unread", width: layout.width, style: TextStyle(foreground: 31))) }
    let previous = serial > firstSerial ? self[serial - 1].day : layout.today
    if entry.day != previous { rows.append(Self.rule(entry.day.text, width: layout.width, style: .dim)) }
    if serial == match, let term = layout.term {
      rows += entry.line.highlighting(term).wrapped(width: layout.width, indent: entry.indent)
    } else {
      rows += wrapCache.rows(of: entry, width: layout.width)
    }
    return rows
  }

  /// `─── text ─────…` across the width.
  static func rule(_ text: String, width: Int, style: TextStyle) -> StyledLine {
    let head = "─── " + text + " "
    let fill = max(0, width - DisplayWidth.of(head))
    return StyledLine(head + String(repeating: "─", count: fill), style).truncated(to: width)
  }

  /// The newest row, or nil for an empty log.
  func bottom(_ layout: Layout) -> ScrollPosition? {
    guard endSerial > firstSerial else { return nil }
    return ScrollPosition(serial: endSerial - 1, row: rows(of: endSerial - 1, layout).count - 1)
  }

  /// The highest the view's bottom row may be: the oldest row at the top of the screen. Nil
  /// when the whole log fits.
  func top(_ layout: Layout) -> ScrollPosition? {
    guard endSerial > firstSerial else { return nil }
    return advance(ScrollPosition(serial: firstSerial, row: 0), by: max(0, layout.height - 1), layout)
  }

  /// The row `count` rows below `position`, or nil when that is past the newest row.
  func advance(_ position: ScrollPosition, by count: Int, _ layout: Layout) -> ScrollPosition? {
    var serial = position.serial
    var row = position.row
    var left = count
    while true {
      let rowCount = rows(of: serial, layout).count
      if row + left < rowCount { return ScrollPosition(serial: serial, row: row + left) }
      left -= rowCount - row
      serial += 1
      row = 0
      if serial >= endSerial { return nil }
    }
  }

  /// The row `count` rows above `position`, or the oldest row.
  func retreat(_ position: ScrollPosition, by count: Int, _ layout: Layout) -> ScrollPosition {
    var serial = position.serial
    var row = position.row
    var left = count
    while left > 0 {
      if row >= left { return ScrollPosition(serial: serial, row: row - left) }
      left -= row + 1
      serial -= 1
      if serial < firstSerial { return ScrollPosition(serial: firstSerial, row: 0) }
      row = rows(of: serial, layout).count - 1
    }
    return ScrollPosition(serial: serial, row: row)
  }

  /// Where the view's bottom row is now: the scroll position kept within the log (entries
  /// may have been forgotten, the width may have changed), or the newest row. Nil for an
  /// empty log.
  func viewBottom(_ layout: Layout) -> ScrollPosition? {
    guard let bottom = bottom(layout) else { return nil }
    guard var position = scroll, let top = top(layout) else { return bottom }
    if position.serial < firstSerial { position = ScrollPosition(serial: firstSerial, row: 0) }
    position.row = min(position.row, rows(of: position.serial, layout).count - 1)
    return min(max(position, top), bottom)
  }

  /// The rows the log shows on `layout.height` rows, top to bottom (fewer when the log is
  /// shorter).
  func visibleRows(_ layout: Layout) -> [StyledLine] {
    guard layout.height > 0, let position = viewBottom(layout) else { return [] }
    var chunks: [[StyledLine]] = [Array(rows(of: position.serial, layout)[...position.row])]
    var count = chunks[0].count
    var serial = position.serial - 1
    while count < layout.height && serial >= firstSerial {
      let entryRows = rows(of: serial, layout)
      chunks.append(entryRows)
      count += entryRows.count
      serial -= 1
    }
    return Array(chunks.reversed().joined().suffix(layout.height))
  }

  // MARK: Scrolling

  /// Scrolls the view up by `count` rows (not above the oldest row).
  mutating func scrollUp(_ count: Int, _ layout: Layout) {
    guard let top = top(layout), let current = viewBottom(layout) else { return }
    let position = max(retreat(current, by: count, layout), top)
    setScroll(position, layout)
  }

  /// Scrolls the view down by `count` rows; at the newest row it follows new lines again.
  mutating func scrollDown(_ count: Int, _ layout: Layout) {
    guard let current = viewBottom(layout), scroll != nil else { return }
    setScroll(advance(current, by: count, layout), layout)
  }

  /// The oldest rows.
  mutating func scrollToTop(_ layout: Layout) {
    guard let top = top(layout) else { return }
    setScroll(top, layout)
  }

  /// The newest rows, following new lines.
  mutating func scrollToBottom() {
    scroll = nil
    newBelow = 0
  }

  /// Shows entry `serial` with its last row at the bottom of the view (or the newest rows
  /// when it is among them).
  mutating func reveal(_ serial: Int, _ layout: Layout) {
    guard contains(serial: serial), let bottom = bottom(layout) else { return }
    let position = ScrollPosition(serial: serial, row: rows(of: serial, layout).count - 1)
    if position >= retreat(bottom, by: max(0, layout.height - 1), layout) {
      scrollToBottom()
    } else {
      setScroll(position, layout)
    }
  }

  private mutating func setScroll(_ position: ScrollPosition?, _ layout: Layout) {
    if let position, let bottom = bottom(layout), position < bottom {
      if scroll == nil { newBelow = 0 }
      scroll = position
    } else {
      scrollToBottom()
    }
  }
}
