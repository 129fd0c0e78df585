import Nearby

/// An option with a typed value: its description (for parsing and help) and how its text
/// becomes a value, declared once — as a static property of the command it belongs to. It is
/// both part of that command's ``CommandSpec`` and the only key that reads the parsed value,
/// so a misspelt option name does not compile, and a value that does not convert is a usage
/// error naming the option (exit 64) before the command runs.
public struct Option<Value: Sendable>: Sendable {
  public let spec: OptionSpec
  let convert: @Sendable (String) throws(OptionValueError) -> Value

  /// - Parameters:
  ///   - convert: turns the text into a value, or throws an ``OptionValueError`` saying what
  ///     to write instead (`give a number from 0 to 65535`).
  public init(_ spec: OptionSpec, convert: @escaping @Sendable (String) throws(OptionValueError) -> Value) {
    precondition(spec.takesValue, "an Option takes a value; use Flag for --\(spec.name)")
    self.spec = spec
    self.convert = convert
  }
}

extension Option where Value == String {
  /// An option whose value is the text itself.
  public init(_ spec: OptionSpec) { self.init(spec) { $0 } }
}

/// An option without a value (`--json`).
public struct Flag: Sendable {
  public let spec: OptionSpec

  public init(_ name: String, short: Character? = nil, help: String, environment: String? = nil) {
    spec = OptionSpec(name, short: short, .flag, help: help, environment: environment)
  }
}

/// Why an option's text is not a valid value: what to write instead.
public struct OptionValueError: Error, Sendable, CustomStringConvertible {
  public let description: String
  public init(_ description: String) { self.description = description }
}

extension ParsedCommand {
  /// The option's value: the last one given (or its environment variable), converted; `nil`
  /// when it was not given.
  /// - Throws: ``CommandLineError/usage(_:path:)`` naming the option and what to write.
  public func value<Value>(_ option: Option<Value>) throws(CommandLineError) -> Value? {
    guard let text = value(option.spec.name) else { return nil }
    return try convert(text, option)
  }

  /// The option's value, or `fallback` when it was not given.
  public func value<Value>(_ option: Option<Value>, default fallback: @autoclosure () -> Value) throws(CommandLineError) -> Value {
    try value(option) ?? fallback()
  }

  /// Every value of a repeatable option, in order, each converted.
  public func values<Value>(_ option: Option<Value>) throws(CommandLineError) -> [Value] {
    var result: [Value] = []
    for text in values(option.spec.name) { result.append(try convert(text, option)) }
    return result
  }

  /// Whether a flag was given (or set through its environment variable).
  public func isSet(_ flag: Flag) -> Bool { self.flag(flag.spec.name) }

  /// Whether the option was given (on the command line or in its environment variable),
  /// whatever its value.
  public func isGiven(_ option: OptionSpec) -> Bool { value(option.name) != nil }

  private func convert<Value>(_ text: String, _ option: Option<Value>) throws(CommandLineError) -> Value {
    do {
      return try option.convert(text)
    } catch {
      if let variable = fromEnvironment[option.spec.name], values(option.spec.name) == [text] {
        throw .usage(
          "invalid \(variable) (environment) '\(Self.visible(text))': \(error.description) (or unset \(variable), or give --\(option.spec.name))",
          path: path)
      }
      throw .usage("invalid --\(option.spec.name) '\(Self.visible(text))': \(error.description)", path: path)
    }
  }

  /// `text` with its hidden characters escaped, so that quoting it cannot reorder or hide
  /// the rest of the message (a name with U+202E).
  static func visible(_ text: String) -> String {
    guard HiddenCharacters.first(in: text) != nil else { return text }
    let scalars = Array(text.unicodeScalars)
    var out = String.UnicodeScalarView()
    for (index, scalar) in scalars.enumerated() {
      let previous = index > 0 ? scalars[index - 1] : nil
      let next = index + 1 < scalars.count ? scalars[index + 1] : nil
      if HiddenCharacters.isHidden(scalar, after: previous, before: next) {
        out.append(contentsOf: "\\u{\(String(scalar.value, radix: 16, uppercase: true))}".unicodeScalars)
      } else {
        out.append(scalar)
      }
    }
    return String(out)
  }
}
