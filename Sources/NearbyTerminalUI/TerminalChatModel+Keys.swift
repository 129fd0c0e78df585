import NearbyChat

extension TerminalChatModel {
  /// Applies keys to the input line; redraws it once at the end (with any notices the keys
  /// produced above it).
  mutating func handle(_ keys: [Key], into screen: inout String, effects: inout [Effect]) {
    guard !keys.isEmpty else { return }
    var shown: [ScreenEntry] = []
    var changed = false
    for key in keys {
      if isQuitting {
        if key == .interrupt { effects.append(.forceQuit) }
        continue
      }
      changed = true
      switch key {
      case .text(let text):
        if !editor.insert(text) { screen += "\u{7}" }
      case .enter:
        submit(&shown, &effects)
      case .tab:
        complete(&shown, &screen)
      case .backspace: editor.deleteBackward()
      case .delete: editor.deleteForward()
      case .left: editor.moveLeft()
      case .right: editor.moveRight()
      case .home: editor.moveHome()
      case .end: editor.moveEnd()
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
      case .interrupt:
        if editor.isEmpty {
          leave(&shown, &effects)
        } else {
          editor.clear()
          history.resetNavigation()
        }
      case .endOfInput:
        if editor.isEmpty {
          leave(&shown, &effects)
        } else {
          editor.deleteForward()
        }
      case .redraw:
        screen += "\u{1B}[H\u{1B}[2J"
        repaint(into: &screen)
        changed = !shown.isEmpty
      case .suspend:
        effects.append(.suspend)
      }
    }
    if changed || !shown.isEmpty { draw(appending: shown, into: &screen) }
  }

  /// Enter: the line goes to the chat (and the history); commands are echoed above.
  private mutating func submit(_ shown: inout [ScreenEntry], _ effects: inout [Effect]) {
    let line = editor.text
    editor.clear()
    if history.add(line) { effects.append(.remember(line)) }
    guard !line.allSatisfy(\.isWhitespace) else { return }
    let trimmed = line.trimmed
    if trimmed.hasPrefix("/") && !trimmed.hasPrefix("//") { shown.append(styler.echo(trimmed, now: now)) }
    if ChatCommand.parse(line) == .quit { isQuitting = true }
    effects.append(.submit(line))
  }

  private mutating func leave(_ shown: inout [ScreenEntry], _ effects: inout [Effect]) {
    isQuitting = true
    shown.append(styler.notice("leaving (Ctrl-C again to leave at once)", now: now))
    effects.append(.quit)
  }

  private mutating func complete(_ shown: inout [ScreenEntry], _ screen: inout String) {
    let outcome = Completion.complete(editor.characters, cursor: editor.cursor, commands: ChatCommand.names, names: roster.names)
    switch outcome {
    case .replace(let range, let text):
      editor.replace(range, with: text)
    case .candidates(let candidates):
      shown.append(styler.notice(candidates.map(Completion.quoted).joined(separator: "  "), now: now))
    case .none:
      screen += "\u{7}"
    }
  }
}
