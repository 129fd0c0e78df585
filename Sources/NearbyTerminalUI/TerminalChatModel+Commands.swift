import Nearby
import NearbyChat

extension TerminalChatModel {
  /// The commands of the terminal chat itself (the rest are the chat's: ``ChatCommand``).
  static let localCommands = ["/close", "/query", "/search"]
  /// Every command, for completion.
  static let commandNames = (ChatCommand.names + localCommands).sorted()

  /// The lines `/help` shows in the terminal chat.
  static let helpText =
    ChatCommand.helpText + "\n" + """
      /query NAME|ID             open the conversation with a peer (Alt-number shows it)
      /close                     close the conversation shown (not the one with everyone)
      /search TEXT               show the newest line with TEXT (Ctrl-R: older ones)
      /help keys                 every key
      In a peer's conversation, a line is a private message to that peer.
      """

  /// Enter: a command runs, a message goes to the conversation shown (one with more than
  /// ``confirmLines`` lines asks first).
  mutating func submit(_ effects: inout [Effect]) {
    let text = editor.text
    guard !text.allSatisfy(\.isWhitespace) else {
      editor.clear()
      return
    }
    let lines = text.split(separator: "\n", omittingEmptySubsequences: false).count
    if lines > Self.confirmLines {
      mode = .confirming(lines: lines)
      return
    }
    send(&effects)
  }

  /// Sends (or runs) what is in the input line.
  mutating func send(_ effects: inout [Effect]) {
    let text = editor.text
    let isOneLine = !text.contains("\n")
    let trimmed = text.trimmed
    if isOneLine && trimmed.hasPrefix("/") && !trimmed.hasPrefix("//") {
      finish(text, effects: &effects)
      add(styler.echo(trimmed, now: now))
      if runLocal(trimmed, &effects) { return }
      if ChatCommand.parse(text) == .quit { isQuitting = true }
      effects.append(.submit(text))
      return
    }
    guard let peer = shown.peer else {
      finish(text, effects: &effects)
      // Several lines are a message even when the first starts with a slash.
      effects.append(.submit(!isOneLine && trimmed.hasPrefix("/") ? "/" + text : text))
      return
    }
    guard roster.isReachable(peer.id) else {
      let name = EventFormatter.sanitize(peer.name.value)
      add(styler.error("\(EventFormatter.label(peer)) is not connected: /invite \(name) first (your text is kept)", now: now))
      return
    }
    finish(text, effects: &effects)
    let body = isOneLine && trimmed.hasPrefix("//") ? String(trimmed.dropFirst()) : text
    effects.append(.submit("/msg \(peer.id.hex) \(body)"))
  }

  /// The line is done: empty the input, remember it (lines of one row only go to the file).
  private mutating func finish(_ text: String, effects: inout [Effect]) {
    editor.clear()
    if history.add(text), !text.contains("\n") { effects.append(.remember(text)) }
  }

  /// Runs a command of the terminal chat itself. - Returns: false for the chat's commands.
  private mutating func runLocal(_ line: String, _ effects: inout [Effect]) -> Bool {
    let (word, rest) = line.splitFirstWord()
    switch word.lowercased() {
    case "/help", "/?":
      let text = rest.lowercased() == "keys" ? KeyBindings.helpText : Self.helpText
      for row in text.split(separator: "\n") { add(styler.notice(String(row), now: now)) }
    case "/query":
      let (target, extra) = rest.splitFirstWord()
      guard !target.isEmpty, extra.isEmpty else {
        add(styler.error("usage: /query NAME|ID", now: now))
        return true
      }
      let candidates = roster.allPeers + conversations.compactMap(\.peer)
      switch PeerResolver.resolve(target, among: candidates) {
      case .peer(let peer):
        let index = conversation(.peer(peer.id), peer: peer, effects: &effects)
        switchTo(index)
      case let resolution:
        add(styler.error(PeerResolver.hint(for: target, resolution, what: "peer"), now: now))
      }
    case "/close":
      guard rest.isEmpty else {
        add(styler.error("/close takes no argument: it closes the conversation shown", now: now))
        return true
      }
      guard current > 0 else {
        add(styler.error("the conversation with everyone stays open; /quit leaves the chat", now: now))
        return true
      }
      let closing = current
      switchTo(closing - 1)
      conversations.remove(at: closing)
    case "/search":
      guard !rest.isEmpty else {
        add(styler.error("usage: /search TEXT (then Ctrl-R for older lines with it, End to go back)", now: now))
        return true
      }
      searchTerm = rest
      conversations[current].match = nil
      var ignored = ""
      findMatch(.newest(before: shown.endSerial - 1), &ignored)  // not the echo of this command
      if shown.match == nil { add(styler.error("no line of this conversation has \"\(EventFormatter.sanitize(rest))\"", now: now)) }
    default:
      return false
    }
    return true
  }
}
