/// A command of a command-line tool: its options, positional arguments and subcommands,
/// described as data so that parsing, help text and errors all come from one place
/// (the shape of swift-argument-parser's `CommandConfiguration`, without its macros).
public struct CommandSpec: Sendable {
  public var name: String
  /// One line: what the command does.
  public var abstract: String
  /// Paragraphs shown under the abstract in `--help`.
  public var discussion: String
  public var options: [OptionSpec]
  public var arguments: [ArgumentSpec]
  public var subcommands: [CommandSpec]
  /// Example invocations shown at the end of `--help`.
  public var examples: [String]

  public init(
    name: String, abstract: String, discussion: String = "", options: [OptionSpec] = [], arguments: [ArgumentSpec] = [],
    subcommands: [CommandSpec] = [], examples: [String] = []
  ) {
    self.name = name
    self.abstract = abstract
    self.discussion = discussion
    self.options = options
    self.arguments = arguments
    self.subcommands = subcommands
    self.examples = examples
  }

  func option(named name: String) -> OptionSpec? { options.first { $0.name == name } }
  func option(short: Character) -> OptionSpec? { options.first { $0.short == short } }
  func subcommand(named name: String) -> CommandSpec? { subcommands.first { $0.name == name } }
}

/// An option: a flag (`--json`) or an option with a value (`--name NAME`).
public struct OptionSpec: Sendable {
  public enum Kind: Sendable {
    case flag
    /// Takes one value; the last occurrence wins.
    case value(name: String)
    /// Takes one value per occurrence; all are kept.
    case repeating(name: String)
  }

  /// The long name without dashes.
  public var name: String
  public var short: Character?
  public var kind: Kind
  public var help: String
  /// Shown as `(default: ...)`.
  public var defaultValue: String?
  /// When set, the value must be one of these.
  public var allowedValues: [String]?
  /// Also read from this environment variable when absent on the command line.
  public var environment: String?

  public init(
    _ name: String, short: Character? = nil, _ kind: Kind = .flag, help: String, default defaultValue: String? = nil,
    allowed: [String]? = nil, environment: String? = nil
  ) {
    self.name = name
    self.short = short
    self.kind = kind
    self.help = help
    self.defaultValue = defaultValue
    self.allowedValues = allowed
    self.environment = environment
  }

  var takesValue: Bool {
    if case .flag = kind { false } else { true }
  }

  var valueName: String {
    switch kind {
    case .flag: ""
    case .value(let name), .repeating(let name): name
    }
  }

  /// `-n, --name NAME`
  var synopsis: String {
    var text = short.map { "-\($0), " } ?? ""
    text += "--\(name)"
    if takesValue { text += " \(valueName)" }
    return text
  }
}

/// A positional argument.
public struct ArgumentSpec: Sendable {
  public var name: String
  public var help: String
  public var isOptional: Bool
  /// Takes every remaining argument.
  public var isVariadic: Bool

  public init(_ name: String, help: String, optional: Bool = false, variadic: Bool = false) {
    self.name = name
    self.help = help
    self.isOptional = optional
    self.isVariadic = variadic
  }

  var synopsis: String {
    let base = "<\(name)>" + (isVariadic ? " ..." : "")
    return isOptional ? "[\(base)]" : base
  }
}
