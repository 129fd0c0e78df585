/// A script for `nearby chat --script`: chat commands to type and events to wait for, in
/// order. ``parse(_:)`` reads the text form (see the README's "Scripts" section).
public struct ChatScript: Sendable, Equatable {
  /// One line of the script that does something.
  public struct Step: Sendable, Equatable {
    /// The 1-based line number in the script.
    public var line: Int
    /// The line as written (without its comment), for messages.
    public var source: String
    public var action: Action
    /// For a step that `repeat N` made: which one it is (1...N) and N.
    public var repetition: Repetition?

    public init(line: Int, source: String, action: Action, repetition: Repetition? = nil) {
      self.line = line
      self.source = source
      self.action = action
      self.repetition = repetition
    }
  }

  /// Which of the steps of a `repeat COUNT STEP` line a step is.
  public struct Repetition: Sendable, Equatable {
    public var index: Int
    public var count: Int
    public init(index: Int, count: Int) {
      self.index = index
      self.count = count
    }
  }

  /// The most steps one `repeat` makes.
  public static let maximumRepetitions = 100_000

  public enum Action: Sendable, Equatable {
    /// An input line for the chat, exactly as a person would type it (`/invite bob lunch?`).
    case chat(String)
    /// Wait until a matching event arrives (or arrived earlier and was not used yet).
    case expect(ScriptExpectation)
    case sleep(Duration)
    /// Let pending messages settle (as at end of input), then leave.
    case quit
  }

  public var steps: [Step]

  public init(steps: [Step]) { self.steps = steps }

  /// How long an `expect` without `within` waits.
  public static let defaultTimeout: Duration = .seconds(10)

  /// Parses the text of a script.
  /// - Throws: ``ChatScriptErrors`` listing every line that is wrong, each with a hint.
  public static func parse(_ text: String) throws(ChatScriptErrors) -> ChatScript {
    var parser = ChatScriptParser()
    // "\r\n" is one Character in Swift: split on both forms.
    var lines = text.split(omittingEmptySubsequences: false) { $0 == "\n" || $0 == "\r\n" }
    if let first = lines.first, first.hasPrefix("\u{FEFF}") { lines[0] = first.dropFirst() }
    for (index, raw) in lines.enumerated() {
      var line = raw
      if line.last == "\r" { line = line.dropLast() }
      parser.parse(line: String(line), number: index + 1)
    }
    if !parser.errors.isEmpty { throw ChatScriptErrors(errors: parser.errors) }
    return ChatScript(steps: parser.steps)
  }
}

/// A duration in script syntax: a number and a unit, `500ms`, `5s`, `1.5s`, `2m`.
public enum ScriptDuration {
  /// The longest duration a script may name (a day: longer is surely a typo).
  public static let maximum: Duration = .seconds(86_400)

  /// - Returns: nil when `text` is not a duration.
  public static func parse(_ text: String) -> Duration? {
    let units: [(String, Double)] = [("ms", 0.001), ("s", 1), ("m", 60)]
    for (unit, scale) in units where text.hasSuffix(unit) {
      let number = text.dropLast(unit.count)
      // Digits with at most one decimal point; no sign, exponent, or "inf".
      guard !number.isEmpty, number.allSatisfy({ $0.isASCII && ($0.isNumber || $0 == ".") }),
        number.filter({ $0 == "." }).count <= 1, number.first != ".", number.last != ".",
        let value = Double(number)
      else { return nil }
      let milliseconds = (value * scale * 1000).rounded()
      guard milliseconds <= 86_400_000 else { return nil }
      return .milliseconds(Int64(milliseconds))
    }
    return nil
  }

  /// An elapsed time for people: `840ms`, `1.25s`.
  public static func elapsed(_ duration: Duration) -> String {
    let total = duration.components.seconds * 1000 + duration.components.attoseconds / 1_000_000_000_000_000
    if total < 1000 { return "\(total)ms" }
    let hundredths = total / 10
    let fraction = hundredths % 100
    return "\(hundredths / 100).\(fraction < 10 ? "0" : "")\(fraction)s"
  }

  /// The shortest script text for a duration (`1.5s`, `500ms`, `2m`).
  public static func format(_ duration: Duration) -> String {
    let milliseconds = duration.components.seconds * 1000 + duration.components.attoseconds / 1_000_000_000_000_000
    if milliseconds % 60_000 == 0 && milliseconds > 0 { return "\(milliseconds / 60_000)m" }
    if milliseconds % 1000 == 0 { return "\(milliseconds / 1000)s" }
    if milliseconds < 1000 { return "\(milliseconds)ms" }
    var text = String(Double(milliseconds) / 1000)
    while text.hasSuffix("0") { text.removeLast() }
    return text + "s"
  }
}
