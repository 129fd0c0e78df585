/// A word, a quoted string or a regular expression of a script line. (`package`: the lab's
/// faults files use the same lexer.)
package struct ScriptToken: Equatable {
  package enum Kind: Equatable {
    case word(String)
    /// `"text"`, escapes resolved.
    case string(String)
    /// `/pattern/` or `/pattern/i`, with `\/` turned into `/`.
    case regex(String, ignoresCase: Bool)
  }

  package var kind: Kind
  /// 1-based.
  package var column: Int
  /// The token as written.
  package var written: String

  package var word: String? {
    if case .word(let text) = kind { text } else { nil }
  }
}

/// A line (or token) that cannot be read: the column, what is wrong, and what to do.
package struct ScriptLineError: Error {
  package var column: Int
  package var message: String
  package var hint: String

  package init(column: Int, message: String, hint: String) {
    self.column = column
    self.message = message
    self.hint = hint
  }
}

/// Splits one line of a script into tokens. `#` at the start of a token starts a comment
/// that runs to the end of the line.
package struct ScriptLexer {
  private let characters: [Character]
  private(set) var index = 0

  package init(_ line: String) { characters = Array(line) }

  private mutating func skipSpaces() {
    while index < characters.count, characters[index].isWhitespace { index += 1 }
  }

  /// Whether only spaces or a comment are left.
  package mutating func atEnd() -> Bool {
    skipSpaces()
    return index >= characters.count || characters[index] == "#"
  }

  /// The next token, or nil at the end of the line (or at a comment).
  /// - Parameter regex: whether `/` starts a regular expression here.
  package mutating func next(regex: Bool = false) throws(ScriptLineError) -> ScriptToken? {
    if atEnd() { return nil }
    let start = index
    let token: ScriptToken.Kind
    switch characters[index] {
    case "\"": token = .string(try quoted())
    case "/" where regex: token = try regularExpression()
    default:
      while index < characters.count, !characters[index].isWhitespace { index += 1 }
      return ScriptToken(kind: .word(String(characters[start..<index])), column: start + 1, written: String(characters[start..<index]))
    }
    if index < characters.count, !characters[index].isWhitespace {
      throw ScriptLineError(
        column: index + 1, message: "unexpected '\(characters[index])' right after \(regex ? "the closing delimiter" : "the closing quote")",
        hint: "put a space between the two")
    }
    return ScriptToken(kind: token, column: start + 1, written: String(characters[start..<index]))
  }

  /// The rest of the line as text: one quoted string, or the words up to a comment (`#`
  /// after a space), spaces at both ends removed. Nil when nothing is left.
  package mutating func text() throws(ScriptLineError) -> (text: String, column: Int)? {
    if atEnd() { return nil }
    let start = index
    if characters[index] == "\"" {
      let text = try quoted()
      if !atEnd() {
        throw ScriptLineError(
          column: index + 1, message: "unexpected text after the quoted text",
          hint: "put all of the text inside the quotes, or none of it")
      }
      return (text, start + 1)
    }
    var end = index
    while index < characters.count, !(characters[index] == "#" && characters[index - 1].isWhitespace) {
      if !characters[index].isWhitespace { end = index + 1 }
      index += 1
    }
    return (String(characters[start..<end]), start + 1)
  }

  /// A `"`-quoted string starting at `index`; `\"`, `\\`, `\n`, `\t` and `\r` are escapes.
  private mutating func quoted() throws(ScriptLineError) -> String {
    let open = index
    index += 1
    var text = ""
    while index < characters.count {
      let character = characters[index]
      index += 1
      switch character {
      case "\"": return text
      case "\\":
        guard index < characters.count else { break }
        let escaped = characters[index]
        index += 1
        switch escaped {
        case "\"": text.append("\"")
        case "\\": text.append("\\")
        case "n": text.append("\n")
        case "t": text.append("\t")
        case "r": text.append("\r")
        default:
          throw ScriptLineError(
            column: index - 1, message: "unknown escape '\\\(escaped)' in a quoted string",
            hint: #"the escapes are \" \\ \n \t \r; write \\ for a backslash"#)
        }
      default: text.append(character)
      }
    }
    throw ScriptLineError(
      column: open + 1, message: "unterminated string: no closing quote",
      hint: #"end the text with a " (write \" for a quote inside it)"#)
  }

  /// `/pattern/flags` starting at `index`; `\/` stands for `/`, other escapes are the regex's.
  private mutating func regularExpression() throws(ScriptLineError) -> ScriptToken.Kind {
    let open = index
    index += 1
    var pattern = ""
    while index < characters.count {
      let character = characters[index]
      index += 1
      if character == "/" {
        var ignoresCase = false
        while index < characters.count, !characters[index].isWhitespace {
          guard characters[index] == "i", !ignoresCase else {
            throw ScriptLineError(
              column: index + 1, message: "unknown regex flag '\(characters[index])'",
              hint: "the only flag is i (ignore case): /hello/i")
          }
          ignoresCase = true
          index += 1
        }
        return .regex(pattern, ignoresCase: ignoresCase)
      }
      if character == "\\", index < characters.count, characters[index] == "/" {
        pattern.append("/")
        index += 1
      } else if character == "\\", index < characters.count {
        pattern.append("\\")
        pattern.append(characters[index])
        index += 1
      } else {
        pattern.append(character)
      }
    }
    throw ScriptLineError(
      column: open + 1, message: "unterminated regex: no closing /",
      hint: #"end the regex with a / (write \/ for a slash inside it)"#)
  }
}
