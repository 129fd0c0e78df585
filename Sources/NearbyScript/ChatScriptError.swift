import NearbyChat

/// A line of a script that cannot be understood: where, what, and what to write instead.
public struct ChatScriptError: Error, Sendable, Equatable, CustomStringConvertible {
  /// 1-based.
  public var line: Int
  /// 1-based, in characters.
  public var column: Int
  public var message: String
  public var hint: String
  /// The line as written.
  public var source: String

  public init(line: Int, column: Int, message: String, hint: String, source: String) {
    self.line = line
    self.column = column
    self.message = message
    self.hint = hint
    self.source = source
  }

  public var description: String { formatted(file: "script") }

  /// `FILE:LINE:COLUMN: message`, the line with a caret under the column, and the hint.
  public func formatted(file: String) -> String {
    let shown = EventFormatter.sanitize(source)
    // Under the character as shown: a tab is shown as spaces, a wide character takes two
    // columns, an escaped one several (counting characters put the caret elsewhere).
    let before = EventFormatter.sanitize(String(source.prefix(max(column, 1) - 1)))
    let caret = DisplayWidth.of(before)
    return """
      \(file):\(line):\(column): \(message)
          \(shown)
          \(String(repeating: " ", count: caret))^
        hint: \(hint)
      """
  }
}

/// Every error of a script that did not parse.
public struct ChatScriptErrors: Error, Sendable, Equatable, CustomStringConvertible {
  public var errors: [ChatScriptError]

  public init(errors: [ChatScriptError]) { self.errors = errors }

  public var description: String { formatted(file: "script") }

  public func formatted(file: String) -> String {
    errors.map { $0.formatted(file: file) }.joined(separator: "\n")
  }
}
