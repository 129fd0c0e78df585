/// Tab completion at the input line: the first word of a command line completes to a
/// command (`/inv` → `/invite `), any other word to a peer name (`al` → `alice `; names
/// with spaces come quoted, the way commands read them), and a name at the start of a
/// message is addressed (`bo` → `bob: `).
public enum Completion {
  public enum Outcome: Equatable, Sendable {
    /// Replace `range` (character offsets) with `text`.
    case replace(Range<Int>, with: String)
    /// Several candidates and nothing more in common: show them.
    case candidates([String])
    /// Nothing matches.
    case none
  }

  /// - Parameters:
  ///   - characters: the input line; `cursor`: where Tab was pressed.
  ///   - commands: command names with their slash; `names`: peer names.
  ///   - argumentNames: for the word right after a command, the names that command acts on
  ///     (when none of them matches: all `names`).
  ///   - argumentIDs: for the word right after a command that takes an id instead of a name
  ///     (`/receive OFFER`), the ids it may take: only those complete, never a name.
  public static func complete(
    _ characters: [Character], cursor: Int, commands: [String], names: [String], argumentNames: (String) -> [String]? = { _ in nil },
    argumentIDs: (String) -> [String]? = { _ in nil }
  ) -> Outcome {
    var start = cursor
    while start > 0, !characters[start - 1].isWhitespace { start -= 1 }
    // A quoted name may contain spaces: extend back to its opening quote.
    if let quote = characters[..<cursor].lastIndex(of: "\""), characters[..<quote].filter({ $0 == "\"" }).count % 2 == 0 {
      start = min(start, quote)
    }
    let word = String(characters[start..<cursor])
    let isFirstWord = characters[..<start].allSatisfy(\.isWhitespace)
    let atLineEnd = cursor == characters.count
    if isFirstWord && word.hasPrefix("/") {
      return finish(word, start..<cursor, candidates: commands.filter { $0.hasPrefix(word.lowercased()) }, atLineEnd: atLineEnd, quote: false)
    }
    let typed = word.hasPrefix("\"") ? String(word.dropFirst()) : word
    if isFirstWord {
      // A name at the start of a message: `bob: `.
      let matches = names.filter { $0.lowercased().hasPrefix(typed.lowercased()) }
      if matches.count == 1 { return .replace(start..<cursor, with: matches[0] + ": ") }
      return finish(word, start..<cursor, candidates: matches, atLineEnd: false, quote: false)
    }
    func matching(_ candidates: [String]) -> [String] { candidates.filter { $0.lowercased().hasPrefix(typed.lowercased()) } }
    let before = String(characters[..<start]).split(whereSeparator: \.isWhitespace)
    if before.count == 1, before[0].hasPrefix("/"), let ids = argumentIDs(String(before[0])) {
      return finish(word, start..<cursor, candidates: matching(ids), atLineEnd: atLineEnd, quote: false)
    }
    var matches = matching(names)
    if before.count == 1, before[0].hasPrefix("/"), let relevant = argumentNames(String(before[0])).map(matching), !relevant.isEmpty {
      matches = relevant  // the names the command acts on, when one of them matches
    }
    return finish(word, start..<cursor, candidates: matches, atLineEnd: atLineEnd, quote: true)
  }

  private static func finish(_ word: String, _ range: Range<Int>, candidates: [String], atLineEnd: Bool, quote: Bool) -> Outcome {
    guard let first = candidates.first else { return .none }
    if candidates.count == 1 {
      let text = quote ? quoted(first) : first
      return .replace(range, with: atLineEnd ? text + " " : text)
    }
    let common = commonPrefix(candidates)
    let typed = word.hasPrefix("\"") ? String(word.dropFirst()) : word
    if common.count > typed.count && !common.contains(where: \.isWhitespace) {
      return .replace(range, with: common)
    }
    return .candidates(candidates)
  }

  /// A name as a command argument: quoted when it has spaces or starts with a quote.
  static func quoted(_ name: String) -> String {
    name.contains(where: \.isWhitespace) || name.hasPrefix("\"") ? "\"\(name)\"" : name
  }

  /// The longest prefix all strings share, compared case-insensitively (the first string's
  /// spelling is kept).
  static func commonPrefix(_ strings: [String]) -> String {
    guard var prefix = strings.first.map({ Array($0) }) else { return "" }
    for string in strings.dropFirst() {
      let other = Array(string)
      var length = 0
      while length < min(prefix.count, other.count), prefix[length].lowercased() == other[length].lowercased() { length += 1 }
      prefix = Array(prefix[..<length])
    }
    return String(prefix)
  }
}
