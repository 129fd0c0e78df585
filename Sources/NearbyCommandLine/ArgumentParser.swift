/// What the parser found for one command.
public struct ParsedCommand: Sendable {
  /// The chain of commands, root first (`["nearby", "chat"]`).
  public let path: [String]
  let values: [String: [String]]
  let flags: Set<String>
  public let arguments: [String: [String]]
  /// The options whose value came from the environment, with the variable's name (an error
  /// about such a value names the variable: the user never typed the option).
  var fromEnvironment: [String: String] = [:]

  // By name, for the typed accessors (TypedOption.swift) only: a command reads its options
  // through their `Option` and `Flag` values, so that a misspelt name does not compile.

  /// Whether a flag was given.
  func flag(_ name: String) -> Bool { flags.contains(name) }

  /// The last value of an option, or its default.
  func value(_ name: String) -> String? { values[name]?.last }

  /// Every value of a repeating option, in order.
  func values(_ name: String) -> [String] { values[name] ?? [] }

  /// A positional argument.
  public func argument(_ name: String) -> String? { arguments[name]?.first }

  /// All values of a variadic positional argument.
  public func variadic(_ name: String) -> [String] { arguments[name] ?? [] }
}

/// Why the command line was not understood, or a request for help or the version.
public enum CommandLineError: Error, Equatable, Sendable {
  /// `--help` (or `help`) for the command at `path`.
  case helpRequested(path: [String])
  case versionRequested
  /// A usage error: the message, and the command whose usage to show.
  case usage(String, path: [String])
}

/// Parses arguments against a ``CommandSpec`` tree.
public struct ArgumentParser: Sendable {
  public let root: CommandSpec

  public init(root: CommandSpec) { self.root = root }

  /// - Parameters:
  ///   - arguments: the arguments after the program name.
  ///   - environment: consulted for options that name an environment variable.
  /// - Throws: ``CommandLineError``.
  public func parse(_ arguments: [String], environment: [String: String] = [:]) throws(CommandLineError) -> ParsedCommand {
    var command = root
    var path = [root.name]
    var values: [String: [String]] = [:]
    var flags: Set<String> = []
    var positionals: [String] = []
    var index = 0
    var optionsEnded = false

    // `nearby help chat` is `nearby chat --help`.
    if arguments.first == "help" {
      var helpPath = [root.name]
      var current = root
      for name in arguments.dropFirst() {
        guard let sub = current.subcommand(named: name) else {
          throw .usage("unknown command '\(name)'\(Self.suggestion(name, current.subcommands.map(\.name)))", path: helpPath)
        }
        current = sub
        helpPath.append(name)
      }
      throw .helpRequested(path: helpPath)
    }

    while index < arguments.count {
      let argument = arguments[index]
      index += 1
      if optionsEnded {
        positionals.append(argument)
        continue
      }
      if argument == "--" {
        optionsEnded = true
        continue
      }
      if argument == "--help" || argument == "-h" { throw .helpRequested(path: path) }
      if argument == "--version" && path.count == 1 { throw .versionRequested }
      if argument.hasPrefix("--") {
        var name = String(argument.dropFirst(2))
        var inline: String?
        if let equals = name.firstIndex(of: "=") {
          inline = String(name[name.index(after: equals)...])
          name = String(name[..<equals])
        }
        guard let option = command.option(named: name) else {
          throw .usage("unknown option '--\(name)'\(Self.suggestion(name, command.options.map(\.name), prefix: "--"))", path: path)
        }
        if option.takesValue {
          let value: String
          if let inline {
            value = inline
          } else if index < arguments.count, !(arguments[index].hasPrefix("-") && arguments[index].count > 1 && !Self.isNumber(arguments[index])) {
            value = arguments[index]
            index += 1
          } else {
            throw .usage("option '--\(name)' needs a value (\(option.valueName))", path: path)
          }
          try Self.check(value, for: option, path: path)
          values[name, default: []].append(value)
        } else {
          if inline != nil { throw .usage("flag '--\(name)' does not take a value", path: path) }
          flags.insert(name)
        }
        continue
      }
      if argument.hasPrefix("-"), argument.count > 1, !Self.isNumber(argument) {
        // Short options, possibly bundled: -jv; a value option takes the rest or the next argument.
        var characters = Array(argument.dropFirst())
        while !characters.isEmpty {
          let character = characters.removeFirst()
          guard let option = command.option(short: character) else {
            throw .usage("unknown option '-\(character)'", path: path)
          }
          if option.takesValue {
            let value: String
            if !characters.isEmpty {
              value = String(characters)
              characters = []
            } else if index < arguments.count {
              value = arguments[index]
              index += 1
            } else {
              throw .usage("option '-\(character)' needs a value (\(option.valueName))", path: path)
            }
            try Self.check(value, for: option, path: path)
            values[option.name, default: []].append(value)
          } else {
            flags.insert(option.name)
          }
        }
        continue
      }
      if positionals.isEmpty, values.isEmpty, flags.isEmpty, let sub = command.subcommand(named: argument) {
        command = sub
        path.append(argument)
        continue
      }
      if !command.subcommands.isEmpty && command.arguments.isEmpty {
        throw .usage(
          "unknown command '\(argument)'\(Self.suggestion(argument, command.subcommands.map(\.name)))", path: path)
      }
      positionals.append(argument)
    }

    if !command.subcommands.isEmpty && command.arguments.isEmpty && path.count == 1 {
      throw .usage("missing command: choose one of \(command.subcommands.map(\.name).joined(separator: ", "))", path: path)
    }

    // Environment variables fill options not given on the command line.
    var fromEnvironment: [String: String] = [:]
    for option in command.options {
      guard values[option.name] == nil, !flags.contains(option.name), let variable = option.environment,
        let value = environment[variable], !value.isEmpty
      else { continue }
      if option.takesValue {
        try Self.check(value, for: option, path: path, variable: variable)
        values[option.name] = [value]
        fromEnvironment[option.name] = variable
      } else if ["1", "true", "yes"].contains(value.lowercased()) {
        flags.insert(option.name)
      }
    }

    var arguments: [String: [String]] = [:]
    var remaining = positionals[...]
    for spec in command.arguments {
      if spec.isVariadic {
        arguments[spec.name] = Array(remaining)
        remaining = []
      } else if let first = remaining.first {
        arguments[spec.name] = [first]
        remaining = remaining.dropFirst()
      } else if !spec.isOptional {
        throw .usage("missing argument <\(spec.name)>", path: path)
      }
    }
    if let extra = remaining.first {
      throw .usage("unexpected argument '\(extra)'", path: path)
    }
    return ParsedCommand(path: path, values: values, flags: flags, arguments: arguments, fromEnvironment: fromEnvironment)
  }

  private static func isNumber(_ text: String) -> Bool { Double(text) != nil }

  private static func check(_ value: String, for option: OptionSpec, path: [String], variable: String? = nil) throws(CommandLineError) {
    if let allowed = option.allowedValues, !allowed.contains(value) {
      if let variable {
        throw .usage(
          "'\(value)' (from \(variable)) is not a valid value for '--\(option.name)': use one of \(allowed.joined(separator: ", ")), or unset \(variable)",
          path: path)
      }
      throw .usage("'\(value)' is not a valid value for '--\(option.name)': use one of \(allowed.joined(separator: ", "))", path: path)
    }
  }

  /// `; did you mean '--name'?` when a known word is close.
  static func suggestion(_ word: String, _ candidates: [String], prefix: String = "") -> String {
    let scored = candidates.map { ($0, editDistance(word, $0)) }.filter { $0.1 <= max(2, word.count / 3) }
    guard let best = scored.min(by: { $0.1 < $1.1 }) else { return "" }
    return "; did you mean '\(prefix)\(best.0)'?"
  }

  static func editDistance(_ a: String, _ b: String) -> Int {
    let a = Array(a)
    let b = Array(b)
    if a.isEmpty { return b.count }
    if b.isEmpty { return a.count }
    var previous = Array(0...b.count)
    for i in 1...a.count {
      var current = [i] + Array(repeating: 0, count: b.count)
      for j in 1...b.count {
        current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
      }
      previous = current
    }
    return previous[b.count]
  }
}
