import NearbyChat

extension TerminalChatModel {
  /// Applies keys: to the input line, the search, the question being asked, or the view.
  mutating func handle(_ keys: [Key], into screen: inout String, effects: inout [Effect]) {
    for key in keys {
      if isQuitting {
        if key == .interrupt { effects.append(.forceQuit) }
        continue
      }
      switch mode {
      case .searching(var search):
        if handleSearch(key, &search, &screen) { continue }
      case .confirming:
        mode = .editing
        if key == .enter {
          send(&effects)
          continue
        }
        if key == .escape || key == .interrupt { continue }
      case .editing:
        break
      }
      handleEditing(key, into: &screen, effects: &effects)
    }
  }

  private mutating func handleEditing(_ key: Key, into screen: inout String, effects: inout [Effect]) {
    let layout = logLayout
    let page = max(1, layout.height - 1)
    switch key {
    case .text(let text), .paste(let text):
      let before = editor.text.utf8.count
      if !editor.insert(text) || editor.text.utf8.count - before < text.utf8.count { ring(&screen) }  // cut at the limit
    case .enter:
      submit(&effects)
    case .tab:
      complete(&screen)
    case .backspace: editor.deleteBackward()
    case .delete: editor.deleteForward()
    case .left: editor.moveLeft()
    case .right: editor.moveRight()
    case .home:
      if editor.isEmpty { conversations[current].scrollToTop(layout) } else { editor.moveHome() }
    case .end:
      if editor.isEmpty {
        conversations[current].scrollToBottom()
        conversations[current].match = nil
      } else {
        editor.moveEnd()
      }
    case .wordLeft: editor.moveWordLeft()
    case .wordRight: editor.moveWordRight()
    case .killToStart: editor.killToStart()
    case .killToEnd: editor.killToEnd()
    case .killWordBackward: editor.killWordBackward()
    case .killWordForward: editor.killWordForward()
    case .yank: editor.yank()
    case .up:
      if let entry = history.previous(current: editor.text) { editor.set(entry) }
    case .down:
      if let entry = history.next() { editor.set(entry) }
    case .pageUp: conversations[current].scrollUp(page, layout)
    case .pageDown:
      conversations[current].scrollDown(page, layout)
      if conversations[current].scroll == nil { conversations[current].match = nil }
    case .conversation(let number):
      if conversations.indices.contains(number - 1) { switchTo(number - 1) } else { ring(&screen) }
    case .previousConversation: switchTo((current + conversations.count - 1) % conversations.count)
    case .nextConversation: switchTo((current + 1) % conversations.count)
    case .searchBackward:
      mode = .searching(LineEditor(searchTerm ?? ""))
      if let searchTerm, !searchTerm.isEmpty { findMatch(.older, &screen) }
    case .searchForward, .escape:
      break
    case .interrupt:
      if editor.isEmpty {
        leave(&effects)
      } else {
        editor.clear()
        history.resetNavigation()
      }
    case .endOfInput:
      if editor.isEmpty { leave(&effects) } else { editor.deleteForward() }
    case .redraw:
      screen += "\u{1B}[H\u{1B}[2J"
      drawn = []
    case .suspend:
      effects.append(.suspend)
    }
  }

  /// A key while the search term is typed. - Returns: whether it was used up (other keys end
  /// the search, keeping the view, and then do what they do).
  private mutating func handleSearch(_ key: Key, _ search: inout LineEditor, _ screen: inout String) -> Bool {
    switch key {
    case .text(let text), .paste(let text):
      search.insert(text.replacingNewlines)
      searchTerm = search.text
      mode = .searching(search)
      findMatch(.newest(before: shown.match.map { $0 + 1 }), &screen)
    case .backspace, .killToStart, .killWordBackward:
      if key == .backspace { search.deleteBackward() } else if key == .killToStart { search.killToStart() } else { search.killWordBackward() }
      searchTerm = search.text
      mode = .searching(search)
      findMatch(.newest(before: nil), &screen)
    case .searchBackward: findMatch(.older, &screen)
    case .searchForward: findMatch(.newer, &screen)
    case .enter:
      mode = .editing
    case .escape, .interrupt:
      mode = .editing
      conversations[current].match = nil
      conversations[current].scrollToBottom()
    case .left, .right, .home, .end, .tab, .delete:
      break
    default:
      mode = .editing
      return false
    }
    return true
  }

  enum SearchStep {
    /// The newest match before a serial (nil: in the whole log).
    case newest(before: Int?)
    /// The match before the one shown.
    case older
    /// The match after the one shown.
    case newer
  }

  /// Moves the view to a match of the search term, highlighted. Rings the bell when there
  /// is none (the view stays).
  mutating func findMatch(_ step: SearchStep, _ screen: inout String) {
    guard let term = searchTerm, !term.isEmpty else { return }
    let conversation = conversations[current]
    let found: Int?
    switch step {
    case .newest(let limit): found = conversation.match(term, before: limit ?? conversation.endSerial)
    case .older: found = conversation.match(term, before: conversation.match ?? conversation.endSerial)
    case .newer: found = conversation.match.flatMap { conversation.match(term, after: $0) }
    }
    guard let found else {
      if case .newest = step { conversations[current].match = nil }
      ring(&screen)
      return
    }
    conversations[current].match = found
    conversations[current].reveal(found, logLayout)
  }

  private mutating func leave(_ effects: inout [Effect]) {
    isQuitting = true
    add(styler.notice("leaving (Ctrl-C again to leave at once)", now: now))
    effects.append(.quit)
  }

  private mutating func complete(_ screen: inout String) {
    let outcome = Completion.complete(
      editor.characters, cursor: editor.cursor, commands: Self.commandNames, names: roster.names,
      argumentNames: { command in completionNames(after: command) },
      argumentIDs: { command in transferCompletions(after: command) })
    switch outcome {
    case .replace(let range, let text):
      editor.replace(range, with: text)
    case .candidates(let candidates):
      add(styler.notice(candidates.map(Completion.quoted).joined(separator: "  "), now: now))
    case .none:
      ring(&screen)
    }
  }

  /// The names worth completing after a command: those it can act on.
  func completionNames(after command: String) -> [String]? {
    switch command.lowercased() {
    case "/accept", "/decline": return Array(Set(roster.inviting.values.map(\.name.value))).sorted()
    case "/leave": return Array(Set(roster.connected.values.map(\.name.value))).sorted()
    default: return nil
    }
  }
}

extension String {
  /// The text on one line (a search term).
  var replacingNewlines: String { String(map { $0 == "\n" ? " " : $0 }) }
}
