import NearbyChat

/// Reads a script line by line into steps, collecting an error (with a hint) for every line
/// it cannot read. The grammar is in the README's "Scripts" section.
struct ChatScriptParser {
  private(set) var steps: [ChatScript.Step] = []
  private(set) var errors: [ChatScriptError] = []
  private var quitLine: Int?

  static let keywords = [
    "say", "msg", "invite", "accept", "decline", "leave", "peers", "who", "invitations", "help", "quit", "expect", "sleep", "repeat",
  ]
  static let expectUsage = #"expect [next|no] EVENT [[from] NAME] ["text" | /regex/] [within DURATION]"#
  static let repeatUsage = "repeat COUNT STEP ({n} in the step counts 1, 2, ... COUNT)"
  static let durationHint = "write a number and a unit: 500ms, 5s, 1.5s or 2m"

  mutating func parse(line source: String, number: Int) {
    let trimmed = source.trimmed
    if trimmed.isEmpty || trimmed.hasPrefix("#") { return }
    // `repeat` and whitespace of any kind (a tab too), or `repeat` alone.
    let lowered = trimmed.lowercased()
    if lowered == "repeat" || lowered.hasPrefix("repeat") && lowered.dropFirst(6).first?.isWhitespace == true {
      parseRepeat(source, number: number)
      return
    }
    do throws(ScriptLineError) {
      let action = try action(of: source)
      if let quitLine {
        throw ScriptLineError(
          column: 1 + source.prefix { $0.isWhitespace }.count, message: "nothing may follow quit (line \(quitLine))",
          hint: "the script ends at quit: remove this line, or the quit")
      }
      if action == .quit { quitLine = number }
      steps.append(ChatScript.Step(line: number, source: Self.withoutComment(source, action: action), action: action))
    } catch {
      errors.append(ChatScriptError(line: number, column: error.column, message: error.message, hint: error.hint, source: source))
    }
  }

  /// `repeat COUNT STEP`: COUNT copies of the step, `{n}` replaced by 1, 2, ... COUNT.
  private mutating func parseRepeat(_ source: String, number: Int) {
    let indent = source.prefix { $0.isWhitespace }.count
    let afterKeyword = source.dropFirst(indent + "repeat".count)
    let countText = afterKeyword.drop { $0.isWhitespace }.prefix { !$0.isWhitespace }
    let countColumn = source.count - afterKeyword.drop { $0.isWhitespace }.count + 1
    let body = String(afterKeyword.drop { $0.isWhitespace }.dropFirst(countText.count))
    do throws(ScriptLineError) {
      guard let count = Int(countText), (1...ChatScript.maximumRepetitions).contains(count) else {
        throw ScriptLineError(
          column: countColumn, message: countText.isEmpty ? "repeat needs a count" : "bad count '\(countText)'",
          hint: "a whole number from 1 to \(ChatScript.maximumRepetitions); usage: \(Self.repeatUsage)")
      }
      let bodyColumn = source.count - body.drop { $0.isWhitespace }.count + 1
      let first = body.drop { $0.isWhitespace }.lowercased()
      if first.isEmpty || first.hasPrefix("#") {
        throw ScriptLineError(column: bodyColumn, message: "repeat needs a step to repeat", hint: "usage: \(Self.repeatUsage)")
      }
      if first.hasPrefix("repeat") || first == "quit" || first.hasPrefix("quit ") || first == "/quit" {
        throw ScriptLineError(
          column: bodyColumn, message: "\(first.hasPrefix("repeat") ? "repeat" : "quit") cannot be repeated", hint: "usage: \(Self.repeatUsage)")
      }
      if let quitLine {
        throw ScriptLineError(
          column: indent + 1, message: "nothing may follow quit (line \(quitLine))", hint: "the script ends at quit: remove this line, or the quit")
      }
      // The column of an error in the step is its column in the whole line.
      let padding = String(repeating: " ", count: bodyColumn - 1)
      for index in 1...count {
        let text = padding + body.drop { $0.isWhitespace }.replacing("{n}", with: String(index))
        let action = try action(of: text)
        steps.append(
          ChatScript.Step(
            line: number, source: Self.withoutComment(text, action: action), action: action,
            repetition: ChatScript.Repetition(index: index, count: count)))
      }
    } catch {
      errors.append(ChatScriptError(line: number, column: error.column, message: error.message, hint: error.hint, source: source))
    }
  }

  /// The line without its comment (a `#` after a space, outside quotes) and outer spaces.
  private static func withoutComment(_ source: String, action: ChatScript.Action) -> String {
    let trimmed = source.trimmed
    if trimmed.hasPrefix("/") { return trimmed }
    let characters = Array(trimmed)
    var inQuotes = false
    var index = 0
    while index < characters.count {
      let character = characters[index]
      if inQuotes && character == "\\" {
        index += 2
        continue
      }
      if character == "\"" { inQuotes.toggle() }
      if !inQuotes && character == "#" && index > 0 && characters[index - 1].isWhitespace { break }
      index += 1
    }
    return String(characters[..<min(index, characters.count)]).trimmed
  }

  private func action(of source: String) throws(ScriptLineError) -> ChatScript.Action {
    let trimmed = source.trimmed
    let indent = source.prefix { $0.isWhitespace }.count
    if trimmed.hasPrefix("/") { return try chatLine(trimmed, column: indent + 1) }
    var lexer = ScriptLexer(source)
    guard let first = try lexer.next(), let keyword = first.word else {
      throw ScriptLineError(
        column: indent + 1, message: "a line starts with a command", hint: "to send a message, write: say TEXT")
    }
    func noMore(_ usage: String) throws(ScriptLineError) {
      if let extra = try lexer.next(regex: true) {
        throw ScriptLineError(column: extra.column, message: "unexpected '\(extra.written)' after \(keyword)", hint: "usage: \(usage)")
      }
    }
    func name(_ usage: String) throws(ScriptLineError) -> String {
      guard let token = try lexer.next() else {
        throw ScriptLineError(column: source.count + 1, message: "\(keyword) needs a peer's name or id", hint: "usage: \(usage)")
      }
      return try Self.name(token, usage: usage)
    }
    switch keyword.lowercased() {
    case "say":
      guard let (text, _) = try lexer.text(), !text.isEmpty else {
        throw ScriptLineError(
          column: source.count + 1, message: "say needs the text to send", hint: #"usage: say TEXT (or say "TEXT" for text with # or quotes)"#)
      }
      return .chat(text.hasPrefix("/") ? "/" + text : text)
    case "msg":
      let peer = try name("msg NAME TEXT")
      guard let (text, _) = try lexer.text(), !text.isEmpty else {
        throw ScriptLineError(column: source.count + 1, message: "msg needs the text to send", hint: "usage: msg NAME TEXT")
      }
      return .chat("/msg \(Self.chatName(peer)) \(text)")
    case "invite":
      let peer = try name("invite NAME [CONTEXT]")
      let context = try lexer.text()?.text ?? ""
      return .chat("/invite \(Self.chatName(peer))" + (context.isEmpty ? "" : " \(context)"))
    case "accept", "decline", "leave":
      let usage = "\(keyword.lowercased()) NAME (quote a name with spaces)"
      let peer = try name(usage)
      try noMore(usage)
      return .chat("/\(keyword.lowercased()) \(Self.chatName(peer))")
    case "peers", "who", "invitations", "help":
      try noMore(keyword.lowercased())
      return .chat("/\(keyword.lowercased())")
    case "quit":
      try noMore("quit")
      return .quit
    case "sleep":
      guard let token = try lexer.next() else {
        throw ScriptLineError(column: source.count + 1, message: "sleep needs a duration", hint: "usage: sleep DURATION; \(Self.durationHint)")
      }
      let duration = try Self.duration(token)
      try noMore("sleep DURATION")
      return .sleep(duration)
    case "expect":
      return .expect(try Self.expectation(&lexer, endColumn: source.count + 1))
    default:
      throw Self.unknownCommand(first)
    }
  }

  /// A line starting with `/` goes to the chat as typed, once the chat would understand it.
  private func chatLine(_ line: String, column: Int) throws(ScriptLineError) -> ChatScript.Action {
    switch ChatCommand.parse(line) {
    case .invalid(let hint):
      throw ScriptLineError(
        column: column, message: hint.split(separator: "; ").first.map(String.init) ?? hint,
        hint: "a line starting with / is a chat command, as typed in the chat (see /help); //text sends /text")
    case .quit: return .quit
    default: return .chat(line)
    }
  }

  private static func unknownCommand(_ token: ScriptToken) -> ScriptLineError {
    let word = token.written
    let lowered = word.lowercased()
    let best = keywords.min { editDistance(lowered, $0) < editDistance(lowered, $1) }
    var hint = "the commands are \(keywords.joined(separator: ", ")), and chat lines starting with /"
    if let best, editDistance(lowered, best) <= max(1, best.count / 3) {
      hint = "did you mean '\(best)'? " + hint
    } else {
      hint = "to send a message, write: say \(word) ...; " + hint
    }
    return ScriptLineError(column: token.column, message: "unknown command '\(word)'", hint: hint)
  }

  private static func expectation(_ lexer: inout ScriptLexer, endColumn: Int) throws(ScriptLineError) -> ScriptExpectation {
    guard var eventToken = try lexer.next(regex: true) else {
      throw ScriptLineError(column: endColumn, message: "expect needs an event", hint: "usage: \(expectUsage)")
    }
    var mode = ScriptExpectation.Mode.any
    if let word = eventToken.word?.lowercased(), word == "next" || word == "no" {
      mode = word == "next" ? .next : .none
      guard let next = try lexer.next(regex: true) else {
        throw ScriptLineError(column: endColumn, message: "expect \(word) needs an event", hint: "usage: \(expectUsage)")
      }
      eventToken = next
    }
    guard let name = eventToken.word, let kind = ScriptEventKind(scriptName: name) else {
      let names = ScriptEventKind.allCases.map(\.rawValue)
      let lowered = eventToken.written.lowercased()
      let best = names.min { editDistance(lowered, $0.lowercased()) < editDistance(lowered, $1.lowercased()) }
      var hint = "the events are \(names.joined(separator: ", "))"
      if let best, editDistance(lowered, best.lowercased()) <= max(1, best.count / 3) { hint = "did you mean '\(best)'? " + hint }
      throw ScriptLineError(column: eventToken.column, message: "unknown event '\(eventToken.written)'", hint: hint)
    }
    var expectation = ScriptExpectation(event: kind, mode: mode)
    var seen: Set<String> = []
    func once(_ clause: String, _ token: ScriptToken) throws(ScriptLineError) {
      guard seen.insert(clause).inserted else {
        throw ScriptLineError(column: token.column, message: "a second \(clause) in one expect", hint: "usage: \(expectUsage)")
      }
    }
    while let token = try lexer.next(regex: true) {
      switch token.kind {
      case .string(let text):
        try once("text", token)
        expectation.text = .exact(text)
      case .regex(let pattern, let ignoresCase):
        try once("text", token)
        do {
          _ = try Regex(pattern)
        } catch {
          throw ScriptLineError(
            column: token.column, message: "bad regex /\(pattern)/: \(error)",
            hint: #"use Swift Regex syntax, e.g. /hi (alice|bob)/ or /^ok$/i; write \/ for a slash"#)
        }
        expectation.text = .regex(pattern, ignoresCase: ignoresCase)
      case .word(let word):
        switch word.lowercased() {
        case "from", "peer":
          try once("from/peer", token)
          guard kind.hasPeer else {
            throw ScriptLineError(
              column: token.column, message: "\(kind.rawValue) events are not about a peer",
              hint: "remove '\(word) ...'; match the text instead: expect \(kind.rawValue) /regex/")
          }
          guard let nameToken = try lexer.next() else {
            throw ScriptLineError(column: endColumn, message: "\(word) needs a peer's name or id", hint: "usage: \(expectUsage)")
          }
          expectation.peer = try Self.name(nameToken, usage: expectUsage)
        case "within":
          try once("within", token)
          guard let durationToken = try lexer.next() else {
            throw ScriptLineError(column: endColumn, message: "within needs a duration", hint: durationHint)
          }
          expectation.timeout = try duration(durationToken)
        default:
          // `expect connected bob`: a bare word is the peer (once, for events about one).
          if kind.hasPeer, !seen.contains("from/peer"), ScriptDuration.parse(word) == nil {
            seen.insert("from/peer")
            expectation.peer = word
            continue
          }
          var hint = "usage: \(expectUsage)"
          if ScriptDuration.parse(word) != nil {
            hint = "write: within \(word)"
          } else if word.first?.isLetter == true || word.first?.isNumber == true {
            hint = #"quote text to match: ""# + word + #" ..."; "# + hint
          }
          throw ScriptLineError(column: token.column, message: "unexpected '\(word)' in expect", hint: hint)
        }
      }
    }
    return expectation
  }

  private static func name(_ token: ScriptToken, usage: String) throws(ScriptLineError) -> String {
    switch token.kind {
    case .word(let word): return word
    case .string(let text) where !text.isEmpty: return text
    default: throw ScriptLineError(column: token.column, message: "expected a peer's name or id", hint: "usage: \(usage)")
    }
  }

  /// A name as the chat reads it: quoted when it has spaces (the chat has no escapes).
  private static func chatName(_ name: String) -> String {
    name.contains(where: \.isWhitespace) || name.hasPrefix("\"") ? "\"\(name)\"" : name
  }

  private static func duration(_ token: ScriptToken) throws(ScriptLineError) -> Duration {
    guard let word = token.word, let duration = ScriptDuration.parse(word) else {
      let text = token.written
      var message = "bad duration '\(text)'"
      if let word = token.word, Double(word) != nil { message += ": it has no unit" }
      if let word = token.word, let value = Double(word.filter { $0.isNumber || $0 == "." }), value * 1000 > 86_400_000 {
        message += ": longer than a day"
      }
      throw ScriptLineError(column: token.column, message: message, hint: durationHint)
    }
    return duration
  }
}
