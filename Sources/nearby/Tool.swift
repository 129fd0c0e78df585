import Nearby
import NearbyCommandLine
import NearbySystem

#if canImport(Glibc)
  import Glibc
#endif

/// A command of the `nearby` tool: its options are read and validated in `init` (a usage
/// error exits 64 before anything starts), then `run` does the work.
protocol Tool: Sendable {
  static var spec: CommandSpec { get }
  /// Reads and validates the options. - Throws: a usage error naming the option.
  init(_ parsed: ParsedCommand, environment: ProcessEnvironment) throws(CommandLineError)
  /// - Returns: the exit code.
  func run(signals: AsyncStream<Int32>?) async -> Int32
}

/// The environment and facts about the process that commands read.
struct ProcessEnvironment: Sendable {
  let variables: [String: String]
  /// Where the process runs: the `nearby` binary, resolved.
  let executable: String
  let arguments: [String]

  static func current() -> ProcessEnvironment {
    var variables: [String: String] = [:]
    var pointer = environ
    while let entry = pointer.pointee {
      let text = String(cString: entry)
      if let equals = text.firstIndex(of: "=") {
        variables[String(text[..<equals])] = String(text[text.index(after: equals)...])
      }
      pointer += 1
    }
    return ProcessEnvironment(variables: variables, executable: CommandLine.arguments[0], arguments: Array(CommandLine.arguments.dropFirst()))
  }

  subscript(name: String) -> String? { variables[name] }

  /// The host's name up to the first dot (at most 63 bytes), for default display names.
  var hostName: String {
    var buffer = [CChar](repeating: 0, count: 256)
    gethostname(&buffer, buffer.count)
    let name = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    let first = name.split(separator: ".").first.map(String.init) ?? "nearby"
    return String(first.utf8.prefix(63)) ?? "nearby"
  }

  /// The terminal width for help text (`COLUMNS`, else 80; at most 120).
  var terminalWidth: Int {
    if let columns = variables["COLUMNS"].flatMap(Int.init), columns > 20 { return min(columns, 120) }
    return 80
  }

  /// Whether stdin and stdout are a terminal that can move its cursor.
  var isInteractiveTerminal: Bool {
    guard isatty(0) == 1, isatty(1) == 1 else { return false }
    let term = variables["TERM"] ?? ""
    return !term.isEmpty && term != "dumb"
  }
}

/// Prints a runtime failure (`Error: ...`) on stderr. - Returns: exit code 1.
func failure(_ message: String) -> Int32 {
  OutputWriter.standardError.line("Error: \(message)")
  return 1
}
