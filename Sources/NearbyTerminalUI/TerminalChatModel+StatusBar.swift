import NearbyChat

extension TerminalChatModel {
  /// The row between the log and the input line:
  /// `[1:all] 2:bob(3!) 3:carol │ -- 2 new below -- │ alice: 1 connected, 2 found`.
  ///
  /// Every conversation with its number (Alt-number shows it), the one shown in brackets,
  /// unread messages counted after the name and `!` when a private message or a mention of
  /// our name is among them; then where the view is (scrolled up, a search), then our name
  /// and the peer counts. Cut with `…` when the terminal is too narrow.
  var statusBar: StyledLine {
    let base = TextStyle.statusBar
    var line = StyledLine()
    for (index, conversation) in conversations.enumerated() {
      if index > 0 { line.append(" ", base) }
      let label = "\(index + 1):\(EventFormatter.sanitize(conversation.title))\(roster.mark(for: conversation.peer?.id).map { " " + $0 } ?? "")"
      if index == current {
        line.append("[\(label)]", TextStyle(bold: true, reverse: true))
      } else if conversation.unread > 0 {
        let style = conversation.alert ? TextStyle(foreground: 31, bold: true, reverse: true) : TextStyle(bold: true, reverse: true)
        line.append("\(label)(\(conversation.unread)\(conversation.alert ? "!" : ""))", style)
      } else {
        line.append(label, base)
      }
    }
    if let view = viewStatus { line.append(" │ " + view, TextStyle(bold: true, reverse: true)) }
    line.append(" │ " + EventFormatter.sanitize(styler.me.name.value) + ": " + counts, base)
    return line.truncated(to: size.columns).padded(to: size.columns, base)
  }

  /// Where the view is, when it is not simply following the newest line.
  var viewStatus: String? {
    var parts: [String] = []
    if case .searching = mode, let searchTerm, !searchTerm.isEmpty {
      parts.append(shown.match == nil ? "no line has \"\(EventFormatter.sanitize(searchTerm))\"" : "search: Ctrl-R older, Ctrl-S newer")
    } else if shown.match != nil, let searchTerm {
      parts.append("match for \"\(EventFormatter.sanitize(searchTerm))\"")
    }
    if shown.scroll != nil {
      parts.append(shown.newBelow > 0 ? "-- \(shown.newBelow) new below (End) --" : "-- scrolled up (End) --")
    }
    return parts.isEmpty ? nil : parts.joined(separator: " ")
  }

  /// `1 connected, 2 found, 1 invitation` (`1/2` on narrow terminals).
  var counts: String {
    guard size.columns >= 50 else { return "\(roster.connected.count)/\(roster.found.count)" }
    var counts = "\(roster.connected.count) connected, \(roster.found.count) found"
    if !roster.inviting.isEmpty { counts += ", \(roster.inviting.count) invitation\(roster.inviting.count == 1 ? "" : "s")" }
    return counts
  }
}
