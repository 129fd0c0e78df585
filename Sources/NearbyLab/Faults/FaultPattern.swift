/// What a `when HOST prints ...` trigger looks for in a line of the host's output.
public enum FaultPattern: Sendable, Equatable, CustomStringConvertible {
  /// The line contains this text.
  case text(String)
  /// The regex (Swift `Regex` syntax) matches somewhere in the line.
  case regex(String, ignoresCase: Bool)

  /// Whether `line` matches.
  public func matches(_ line: String) -> Bool {
    switch self {
    case .text(let text): return line.contains(text)
    case .regex(let pattern, let ignoresCase):
      guard let regex = try? Regex(pattern) else { return false }
      return line.contains(ignoresCase ? regex.ignoresCase() : regex)
    }
  }

  /// Why the regex does not compile, if it does not.
  var compileError: String? {
    guard case .regex(let pattern, _) = self else { return nil }
    do {
      _ = try Regex(pattern)
      return nil
    } catch {
      return "\(error)"
    }
  }

  /// As written in a faults file.
  public var description: String {
    switch self {
    case .text(let text): "\"\(text)\""
    case .regex(let pattern, let ignoresCase): "/\(pattern)/" + (ignoresCase ? "i" : "")
    }
  }
}
