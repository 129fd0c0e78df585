/// Renders help and usage text for a ``CommandSpec`` tree, in the layout of
/// swift-argument-parser: OVERVIEW, USAGE, ARGUMENTS, OPTIONS, SUBCOMMANDS.
public struct HelpFormatter: Sendable {
  public let root: CommandSpec
  public let width: Int

  public init(root: CommandSpec, width: Int = 80) {
    self.root = root
    self.width = width
  }

  /// The commands along `path` (root first).
  func commands(_ path: [String]) -> [CommandSpec] {
    var result = [root]
    for name in path.dropFirst() {
      guard let next = result.last!.subcommand(named: name) else { break }
      result.append(next)
    }
    return result
  }

  /// `nearby chat --name <name> [--service <type>] ...`
  public func usage(_ path: [String]) -> String {
    let chain = commands(path)
    let command = chain.last!
    var parts = [chain.map(\.name).joined(separator: " ")]
    if !command.subcommands.isEmpty && command.arguments.isEmpty {
      parts.append("<command>")
    } else {
      for option in command.options {
        var text = "--\(option.name)"
        if option.takesValue { text += " <\(option.valueName.lowercased())>" }
        let repeating: Bool
        if case .repeating = option.kind { repeating = true } else { repeating = false }
        parts.append(repeating ? "[\(text) ...]" : "[\(text)]")
      }
      parts += command.arguments.map(\.synopsis)
    }
    return wrap(parts, indent: "  ", firstPrefix: "")
  }

  /// The full `--help` text.
  public func help(_ path: [String], version: String? = nil) -> String {
    let chain = commands(path)
    let command = chain.last!
    let fullName = chain.map(\.name).joined(separator: " ")
    var out = "OVERVIEW: \(command.abstract)"
    if let version, chain.count == 1 { out += " (version \(version))" }
    out += "\n"
    if !command.discussion.isEmpty { out += "\n" + command.discussion + "\n" }
    out += "\nUSAGE: " + usage(path) + "\n"
    if !command.arguments.isEmpty {
      out += "\nARGUMENTS:\n"
      for argument in command.arguments { out += row("<\(argument.name)>", argument.help) }
    }
    out += "\nOPTIONS:\n"
    for option in command.options {
      var help = option.help
      if let allowed = option.allowedValues { help += " (values: \(allowed.joined(separator: ", ")))" }
      if let defaultValue = option.defaultValue { help += " (default: \(defaultValue))" }
      if let variable = option.environment { help += " (env: \(variable))" }
      out += row(option.synopsis, help)
    }
    if chain.count == 1 { out += row("--version", "Show the version.") }
    out += row("-h, --help", "Show help information.")
    if !command.subcommands.isEmpty {
      out += "\nSUBCOMMANDS:\n"
      for sub in command.subcommands { out += row(sub.name, sub.abstract) }
      out += "\n  See '\(fullName) help <subcommand>' for detailed help.\n"
    }
    if !command.examples.isEmpty {
      out += "\nEXAMPLES:\n"
      for example in command.examples { out += "  \(example)\n" }
    }
    return out
  }

  /// What a usage error prints on stderr.
  public func usageError(_ message: String, path: [String]) -> String {
    let fullName = commands(path).map(\.name).joined(separator: " ")
    return "Error: \(message)\nUsage: \(usage(path))\n  See '\(fullName) --help' for more information.\n"
  }

  private func row(_ left: String, _ right: String) -> String {
    let column = 26
    let prefix = "  " + left
    let words = right.split(separator: " ").map(String.init)
    var lines: [String] = []
    var line = ""
    for word in words {
      if !line.isEmpty && line.count + 1 + word.count > width - column {
        lines.append(line)
        line = word
      } else {
        line += line.isEmpty ? word : " " + word
      }
    }
    if !line.isEmpty { lines.append(line) }
    if lines.isEmpty { return prefix + "\n" }
    var out: String
    if prefix.count < column {
      out = prefix + String(repeating: " ", count: column - prefix.count) + lines[0] + "\n"
    } else {
      out = prefix + "\n" + String(repeating: " ", count: column) + lines[0] + "\n"
    }
    for more in lines.dropFirst() { out += String(repeating: " ", count: column) + more + "\n" }
    return out
  }

  private func wrap(_ parts: [String], indent: String, firstPrefix: String) -> String {
    var lines: [String] = []
    var line = firstPrefix
    for part in parts {
      if line.count + part.count + 1 > width - 8, !line.trimmingCharacters().isEmpty {
        lines.append(line)
        line = indent + "      " + part
      } else {
        line += (line.isEmpty ? "" : " ") + part
      }
    }
    lines.append(line)
    return lines.joined(separator: "\n")
  }
}

extension String {
  fileprivate func trimmingCharacters() -> String {
    var text = Substring(self)
    while text.first == " " { text = text.dropFirst() }
    return String(text)
  }
}
