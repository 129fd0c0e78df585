extension ChatCommand {
  /// `/send`, `/receive`, `/refuse`, `/transfers` and `/cancel`.
  static func parseFileCommand(_ word: String, _ rest: String) -> ChatCommand {
    let words = Self.words(rest)
    switch word {
    case "/send":
      guard case .success(let words) = words, words.count >= 2 else {
        if case .failure(let problem) = words { return .invalid(problem.text) }
        return .invalid("usage: /send NAME|ID PATH... (quote a path with spaces: \"my file.txt\")")
      }
      return .sendFiles(target: words[0], paths: Array(words.dropFirst()))
    case "/transfers":
      return rest.isEmpty ? .transfers : .invalid("/transfers takes no argument")
    case "/receive":
      guard case .success(let words) = words else {
        if case .failure(let problem) = words { return .invalid(problem.text) }
        return .invalid("usage: /receive [OFFER [FILE...]]")
      }
      return .receive(offer: words.first, files: Array(words.dropFirst()))
    default:
      guard case .success(let words) = words, words.count <= 1 else {
        return .invalid("usage: \(word) [\(word == "/cancel" ? "TRANSFER" : "OFFER")] (4 or more hex digits of its id)")
      }
      let id = words.first
      return word == "/refuse" ? .refuse(offer: id) : .cancelTransfer(id)
    }
  }

  /// Splits at spaces; a word in double quotes keeps its spaces, `\` escapes the next
  /// character (`\"`, `\\`, `\ `).
  static func words(_ text: String) -> Result<[String], CommandProblem> {
    var words: [String] = []
    var current = ""
    var inWord = false
    var quoted = false
    var escaped = false
    for character in text {
      if escaped {
        current.append(character)
        escaped = false
        inWord = true
      } else if character == "\\" {
        escaped = true
      } else if character == "\"" {
        quoted.toggle()
        inWord = true
      } else if character.isWhitespace && !quoted {
        if inWord { words.append(current) }
        current = ""
        inWord = false
      } else {
        current.append(character)
        inWord = true
      }
    }
    if quoted { return .failure(CommandProblem(text: "a quoted path has no closing quote")) }
    if escaped { current.append("\\") }
    if inWord { words.append(current) }
    return .success(words)
  }
}

/// Why a command line could not be split into words.
package struct CommandProblem: Error, Equatable {
  package let text: String
  package init(text: String) { self.text = text }
}
