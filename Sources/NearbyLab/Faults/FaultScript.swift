import NearbyScript

/// A lab's faults file (`DIR/faults`, beside the host scripts): one fault per line, each
/// with its trigger.
///
/// ```
/// at 5s partition alice bob                         # 5 s after the hosts started
/// at 8.5s heal
/// when alice prints /connected to bob/ loss bob 50%  # the first line of alice's output that matches
/// when bob prints "hello" after 1s kill bob
/// ```
///
/// Blank lines and lines starting with `#` are ignored; `#` after a space starts a comment;
/// keywords are case-insensitive. Each line runs once.
public struct FaultScript: Sendable, Equatable {
  /// When a step runs.
  public enum Trigger: Sendable, Equatable {
    /// This long after the hosts started.
    case at(Duration)
    /// `delay` after the first line of `host`'s output (stdout or stderr) that matches.
    case output(host: String, pattern: FaultPattern, delay: Duration)
  }

  /// One line.
  public struct Step: Sendable, Equatable {
    public var line: Int
    /// The line as written.
    public var source: String
    public var trigger: Trigger
    public var action: FaultAction
    /// Every host name of the line, with its column (for errors about the lab's hosts).
    var hostColumns: [HostColumn]
  }

  struct HostColumn: Sendable, Equatable {
    var name: String
    var column: Int
  }

  public var steps: [Step]

  static let durationHint = "write a number and a unit: 500ms, 5s, 1.5s or 2m (at most a day)"
  static let triggerHint = "a fault line is: at DURATION FAULT, or: when HOST prints \"TEXT\"|/REGEX/ [after DURATION] FAULT"

  /// Reads a faults file.
  /// - Throws: every line's error at once (``ChatScriptErrors``: `FILE:LINE:COLUMN`, a caret
  ///   under the column, and a hint).
  public static func parse(_ text: String) throws(ChatScriptErrors) -> FaultScript {
    let (script, errors) = read(text)
    guard errors.isEmpty else { throw ChatScriptErrors(errors: errors) }
    return script
  }

  /// Reads a faults file: the lines that parse, and an error for each line that does not.
  public static func read(_ text: String) -> (script: FaultScript, errors: [ChatScriptError]) {
    var steps: [Step] = []
    var errors: [ChatScriptError] = []
    for (offset, source) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
      let line = String(source.last == "\r" ? source.dropLast() : source)
      var lexer = ScriptLexer(line)
      if lexer.atEnd() { continue }
      do throws(ScriptLineError) {
        steps.append(try step(&lexer, line: offset + 1, source: line))
      } catch {
        errors.append(ChatScriptError(line: offset + 1, column: error.column, message: error.message, hint: error.hint, source: line))
      }
    }
    return (FaultScript(steps: steps), errors)
  }

  private static func step(_ lexer: inout ScriptLexer, line: Int, source: String) throws(ScriptLineError) -> Step {
    let end = source.count + 1
    var hosts: [(name: String, column: Int)] = []
    guard let first = try lexer.next(regex: true) else { throw ScriptLineError(column: 1, message: "empty line", hint: triggerHint) }
    let trigger: Trigger
    switch first.word?.lowercased() {
    case "at":
      trigger = .at(try duration(&lexer, after: "at", endColumn: end))
    case "when":
      guard let host = try lexer.next(regex: true), let name = host.word, LabPlan.isValidHostName(name) else {
        throw ScriptLineError(column: end, message: "when needs a host (1-24 letters and digits)", hint: triggerHint)
      }
      hosts.append((name, host.column))
      let verb = try lexer.next(regex: true)
      guard verb?.word?.lowercased() == "prints" else {
        throw ScriptLineError(column: verb?.column ?? end, message: "expected 'prints' after when \(name)", hint: triggerHint)
      }
      let pattern: FaultPattern
      let token = try lexer.next(regex: true)
      switch token?.kind {
      case .string(let text)?: pattern = .text(text)
      case .regex(let expression, let ignoresCase)?:
        pattern = .regex(expression, ignoresCase: ignoresCase)
        if let problem = pattern.compileError {
          throw ScriptLineError(
            column: token?.column ?? end, message: "bad regex /\(expression)/: \(problem)",
            hint: #"use Swift Regex syntax, e.g. /connected to (alice|bob)/ or /^ok$/i; write \/ for a slash"#)
        }
      default:
        throw ScriptLineError(column: token?.column ?? end, message: "when \(name) prints needs \"TEXT\" or /REGEX/ to look for", hint: triggerHint)
      }
      var delay: Duration = .zero
      var probe = lexer
      if try probe.next(regex: true)?.word?.lowercased() == "after" {
        lexer = probe
        delay = try duration(&lexer, after: "after", endColumn: end)
      }
      trigger = .output(host: name, pattern: pattern, delay: delay)
    default:
      if let word = first.word?.lowercased(), FaultActionParser.keywords.contains(word) {
        throw ScriptLineError(
          column: first.column, message: "\(word) needs a trigger in front", hint: "write: at 5s \(word) ..., or: when HOST prints /TEXT/ \(word) ..."
        )
      }
      throw ScriptLineError(column: first.column, message: "unknown trigger '\(first.written)'", hint: triggerHint)
    }
    let action = try FaultActionParser.action(&lexer, endColumn: end, hosts: &hosts)
    return Step(line: line, source: source, trigger: trigger, action: action, hostColumns: hosts.map { HostColumn(name: $0.name, column: $0.column) })
  }

  private static func duration(_ lexer: inout ScriptLexer, after keyword: String, endColumn: Int) throws(ScriptLineError) -> Duration {
    guard let token = try lexer.next(regex: true) else {
      throw ScriptLineError(column: endColumn, message: "\(keyword) needs a duration", hint: durationHint)
    }
    guard let duration = ScriptDuration.parse(token.written) else {
      let noUnit = !token.written.isEmpty && token.written.allSatisfy { $0.isNumber || $0 == "." }
      throw ScriptLineError(column: token.column, message: "bad duration '\(token.written)'" + (noUnit ? ": it has no unit" : ""), hint: durationHint)
    }
    return duration
  }
}
