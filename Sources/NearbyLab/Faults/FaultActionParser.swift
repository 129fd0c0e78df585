import NearbyScript

/// Reads the action part of a fault (`partition alice bob`), from a faults file line or from
/// `nearby-lan fault ID ...`.
enum FaultActionParser {
  static var keywords: [String] { FaultAction.usages.map(\.keyword) }

  /// The action at the lexer's position, which must end the line.
  /// - Parameters:
  ///   - endColumn: the column just after the line (where a missing word is reported).
  ///   - hosts: receives each host name with its column (for checks against the lab's hosts).
  static func action(_ lexer: inout ScriptLexer, endColumn: Int, hosts: inout [(name: String, column: Int)]) throws(ScriptLineError) -> FaultAction {
    guard let first = try lexer.next(regex: true) else {
      throw ScriptLineError(
        column: endColumn, message: "a trigger needs a fault after it", hint: "the faults are \(keywords.joined(separator: ", "))")
    }
    guard let keyword = first.word?.lowercased(), let usage = FaultAction.usages.first(where: { $0.keyword == keyword })?.usage else {
      throw unknown(first)
    }
    func word(_ what: String) throws(ScriptLineError) -> ScriptToken {
      guard let token = try lexer.next(regex: true) else {
        throw ScriptLineError(column: endColumn, message: "\(keyword) needs \(what)", hint: "usage: \(usage)")
      }
      guard token.word != nil else {
        throw ScriptLineError(column: token.column, message: "expected \(what), not \(token.written)", hint: "usage: \(usage)")
      }
      return token
    }
    func host() throws(ScriptLineError) -> String {
      let token = try word("a host")
      return try name(token.written, column: token.column, usage: usage, hosts: &hosts)
    }
    func side() throws(ScriptLineError) -> [String] {
      let token = try word("hosts on both sides")
      var names: [String] = []
      var column = token.column
      for part in token.written.split(separator: ",", omittingEmptySubsequences: false) {
        names.append(try name(String(part), column: column, usage: usage, hosts: &hosts))
        column += part.count + 1
      }
      return names
    }
    let action: FaultAction
    switch keyword {
    case "loss":
      let name = try host()
      let token = try word("a percentage")
      let digits = token.written.dropLast()
      guard token.written.hasSuffix("%"), !digits.isEmpty, digits.allSatisfy({ $0.isASCII && $0.isNumber }), let percent = Int(digits), percent <= 100
      else {
        throw ScriptLineError(
          column: token.column, message: "bad loss '\(token.written)'", hint: "write a whole percentage from 0% to 100%, e.g. loss \(name) 10%")
      }
      action = .loss(host: name, percent: percent)
    case "partition", "heal":
      if keyword == "heal", lexer.atEnd() { return .healAll }
      let one = try side()
      let other = try side()
      if let both = one.first(where: other.contains) {
        throw ScriptLineError(column: first.column, message: "\(both) is on both sides", hint: "usage: \(usage)")
      }
      action = keyword == "heal" ? .heal(one, other) : .partition(one, other)
    case "link":
      let name = try host()
      let state = try word("down or up")
      guard ["down", "up"].contains(state.written.lowercased()) else {
        throw ScriptLineError(column: state.column, message: "link \(name) \(state.written): expected down or up", hint: "usage: \(usage)")
      }
      var segment: Int?
      if let number = try lexer.next(regex: true) {
        guard let value = Int(number.written), value > 0 else {
          throw ScriptLineError(
            column: number.column, message: "bad segment number '\(number.written)'", hint: "segments count from 1; usage: \(usage)")
        }
        segment = value
      }
      action = .link(host: name, up: state.written.lowercased() == "up", segment: segment)
    case "rate":
      let name = try host()
      let token = try word("a rate")
      if token.written.lowercased() == "off" {
        action = .rate(host: name, rate: nil)
      } else if let rate = FaultAction.Rate(token.written) {
        action = .rate(host: name, rate: rate)
      } else {
        throw ScriptLineError(
          column: token.column, message: "bad rate '\(token.written)'", hint: "write a whole number and kbit, mbit or gbit (8kbit to 100gbit), or off"
        )
      }
    case "avahi":
      let name = try host()
      let token = try word("restart, stop, start or kill")
      guard let what = LANCommand.AvahiAction(rawValue: token.written.lowercased()), what != .status else {
        throw ScriptLineError(
          column: token.column, message: "avahi \(name) \(token.written): expected restart, stop, start or kill", hint: "usage: \(usage)")
      }
      action = .avahi(host: name, what)
    case "pause": action = .pause(try host())
    case "resume": action = .resume(try host())
    case "kill": action = .kill(try host())
    default: action = .restart(try host())
    }
    if let extra = try lexer.next(regex: true) {
      throw ScriptLineError(column: extra.column, message: "unexpected '\(extra.written)' after \(keyword)", hint: "usage: \(usage)")
    }
    return action
  }

  private static func name(_ text: String, column: Int, usage: String, hosts: inout [(name: String, column: Int)]) throws(ScriptLineError) -> String {
    guard LabPlan.isValidHostName(text) else {
      throw ScriptLineError(column: column, message: "bad host name '\(text)'", hint: "host names are 1-24 letters and digits; usage: \(usage)")
    }
    hosts.append((text, column))
    return text
  }

  static func unknown(_ token: ScriptToken) -> ScriptLineError {
    let word = token.written.lowercased()
    var hint = "the faults are \(keywords.joined(separator: ", "))"
    if let best = keywords.min(by: { distance(word, $0) < distance(word, $1) }), distance(word, best) <= max(1, best.count / 3) {
      hint = "did you mean '\(best)'? " + hint
    }
    return ScriptLineError(column: token.column, message: "unknown fault '\(token.written)'", hint: hint)
  }

  /// Levenshtein distance, for "did you mean".
  static func distance(_ a: String, _ b: String) -> Int {
    let a = Array(a)
    let b = Array(b)
    var previous = Array(0...b.count)
    for i in a.indices {
      var current = [i + 1] + Array(repeating: 0, count: b.count)
      for j in b.indices { current[j + 1] = min(previous[j + 1] + 1, current[j] + 1, previous[j] + (a[i] == b[j] ? 0 : 1)) }
      previous = current
    }
    return previous[b.count]
  }
}
