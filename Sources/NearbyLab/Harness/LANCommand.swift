import NearbyScript

/// A command of the harness tool `nearby-lan` (also run as `scripts/lan`), parsed from its
/// arguments. Pure; ``LANTool`` runs it.
public enum LANCommand: Sendable, Equatable {
  /// What `lan avahi` does to a host's daemon.
  public enum AvahiAction: String, Sendable, CaseIterable {
    case start, stop, kill, status, restart
  }

  /// The host whose avahi-daemon `lan avahi` acts on.
  public enum AvahiTarget: Sendable, Equatable {
    /// The loopback host we run in (from inside `lan loopback`).
    case loopback
    case host(id: String, host: String)
  }

  /// Options of `lan loopback`.
  public struct Loopback: Sendable, Equatable {
    public var avahi = true
    public var hostName = "nearby-loopback"
    /// The command to run inside (the user's shell when empty).
    public var command: [String] = []
    public init() {}
  }

  case help
  case check(noAvahi: Bool)
  case loopback(Loopback)
  case up(id: String, segments: [String])
  /// `lan exec ID HOST [--env K=V ...] -- CMD...`; `environment` holds the `K=V` texts.
  case exec(id: String, host: String, environment: [String], command: [String])
  case avahi(AvahiTarget, AvahiAction)
  case address(id: String, host: String, segment: Int?)
  case hostName(id: String, host: String)
  case list
  case down(id: String)
  case selftest
  /// `lan fault ID ACTION...`: a network fault (see ``FaultAction``).
  case fault(id: String, FaultAction)

  // Internal entry points, run by the harness itself inside namespaces.
  /// The loopback host's setup and supervisor, after the unshare.
  case loopbackInner(avahi: Bool, hostName: String, command: [String])
  /// Sweeps the loopback namespace when the supervisor (`pid`) dies without doing so.
  case loopbackWatchdog(pid: Int32)
  /// A host's anchor: joins `namespace`, makes a private /run, then sleeps forever.
  case anchor(namespace: String, directory: String)
  case startDaemons(directory: String)
  case startAvahi(directory: String)
  /// Part (a) of the self-test, inside a loopback host.
  case selftestLoopback(pidFile: String)

  /// Parses the arguments after the program name.
  /// - Throws: ``LANError`` (usage) with the usage of the command that is wrong.
  public static func parse(_ arguments: [String]) throws(LANError) -> LANCommand {
    guard let name = arguments.first else { return .help }
    let rest = Array(arguments.dropFirst())
    switch name {
    case "help", "-h", "--help": return .help
    case "check":
      guard rest.isEmpty || rest == ["--no-avahi"] else { throw .usage("usage: lan check [--no-avahi]") }
      return .check(noAvahi: !rest.isEmpty)
    case "loopback": return .loopback(try parseLoopback(rest))
    case "up":
      guard rest.count >= 2 else { throw .usage("usage: lan up ID SEGMENT [SEGMENT...]") }
      return .up(id: rest[0], segments: Array(rest.dropFirst()))
    case "exec": return try parseExec(rest)
    case "avahi": return try parseAvahi(rest)
    case "addr":
      guard rest.count == 2 || rest.count == 3 else { throw .usage("usage: lan addr ID HOST [SEGMENT#]") }
      var segment: Int?
      if rest.count == 3 {
        guard let number = Int(rest[2]), number > 0 else { throw .usage("bad segment number '\(rest[2])': segments count from 1") }
        segment = number
      }
      return .address(id: rest[0], host: rest[1], segment: segment)
    case "hostname":
      guard rest.count == 2 else { throw .usage("usage: lan hostname ID HOST") }
      return .hostName(id: rest[0], host: rest[1])
    case "list":
      guard rest.isEmpty else { throw .usage("usage: lan list") }
      return .list
    case "down":
      guard rest.count == 1 else { throw .usage("usage: lan down ID") }
      return .down(id: rest[0])
    case "selftest":
      guard rest.isEmpty else { throw .usage("usage: lan selftest") }
      return .selftest
    case "fault": return try parseFault(rest)
    default: return try parseInternal(name, rest)
    }
  }

  private static func parseInternal(_ name: String, _ rest: [String]) throws(LANError) -> LANCommand {
    switch (name, rest.count) {
    case ("__loopback-inner", 2...): return .loopbackInner(avahi: rest[0] == "1", hostName: rest[1], command: Array(rest.dropFirst(2)))
    case ("__loopback-watchdog", 1):
      guard let pid = Int32(rest[0]) else { break }
      return .loopbackWatchdog(pid: pid)
    case ("__anchor", 2): return .anchor(namespace: rest[0], directory: rest[1])
    case ("__start-daemons", 1): return .startDaemons(directory: rest[0])
    case ("__start-avahi", 1): return .startAvahi(directory: rest[0])
    case ("__selftest-loopback", 1): return .selftestLoopback(pidFile: rest[0])
    default: break
    }
    throw .usage("unknown command '\(name)'")
  }

  private static func parseFault(_ arguments: [String]) throws(LANError) -> LANCommand {
    let usage = "usage: lan fault ID loss|partition|heal|link|rate|avahi ... (for example: lan fault t1 partition a b)"
    guard arguments.count >= 2 else { throw .usage(usage) }
    let line = arguments.dropFirst().joined(separator: " ")
    var lexer = ScriptLexer(line)
    var hosts: [(name: String, column: Int)] = []
    do throws(ScriptLineError) {
      let action = try FaultActionParser.action(&lexer, endColumn: line.count + 1, hosts: &hosts)
      if action.isProcessFault {
        throw ScriptLineError(column: 1, message: "\(line) acts on a host's process", hint: "nearby lab does that, from DIR/faults")
      }
      return .fault(id: arguments[0], action)
    } catch {
      throw .usage("lan fault: \(error.message) (\(error.hint))")
    }
  }

  private static func parseLoopback(_ arguments: [String]) throws(LANError) -> Loopback {
    var options = Loopback()
    var rest = arguments[...]
    while let argument = rest.first {
      if argument == "--" {
        rest = rest.dropFirst()
        break
      } else if argument == "--no-avahi" {
        options.avahi = false
      } else if argument == "--host-name" {
        guard rest.count >= 2 else { throw .usage("--host-name needs a value") }
        rest = rest.dropFirst()
        options.hostName = rest.first!
      } else if argument.hasPrefix("--host-name=") {
        options.hostName = String(argument.dropFirst("--host-name=".count))
      } else if argument.hasPrefix("-") {
        throw .usage("loopback: unknown option \(argument)")
      } else {
        break
      }
      rest = rest.dropFirst()
    }
    guard isValidDNSLabel(options.hostName) else { throw .usage("bad --host-name '\(options.hostName)'") }
    options.command = Array(rest)
    return options
  }

  private static func parseExec(_ arguments: [String]) throws(LANError) -> LANCommand {
    guard arguments.count >= 2 else { throw .usage("usage: lan exec ID HOST [--env K=V ...] -- CMD [ARGS...]") }
    var environment: [String] = []
    var rest = arguments.dropFirst(2)
    while let argument = rest.first {
      rest = rest.dropFirst()
      if argument == "--" { break }
      if argument == "--env" {
        guard let value = rest.first else { throw .usage("--env needs K=V") }
        guard isAssignment(value) else { throw .usage("bad --env '\(value)' (expected K=V)") }
        environment.append(value)
        rest = rest.dropFirst()
      } else if argument.hasPrefix("--env=") {
        guard isAssignment(String(argument.dropFirst(6))) else { throw .usage("bad \(argument) (expected --env=K=V)") }
        environment.append(String(argument.dropFirst(6)))
      } else {
        throw .usage("lan exec: expected -- before the command (got '\(argument)')")
      }
    }
    guard !rest.isEmpty else { throw .usage("lan exec: no command") }
    return .exec(id: arguments[0], host: arguments[1], environment: environment, command: Array(rest))
  }

  private static func parseAvahi(_ arguments: [String]) throws(LANError) -> LANCommand {
    let usage = "usage: lan avahi ID HOST start|stop|restart|kill|status (or: lan avahi loopback ACTION, inside lan loopback)"
    let target: AvahiTarget
    switch arguments.count {
    case 2 where arguments[0] == "loopback": target = .loopback
    case 3: target = .host(id: arguments[0], host: arguments[1])
    default: throw .usage(usage)
    }
    guard let action = AvahiAction(rawValue: arguments.last!) else {
      throw .usage("lan avahi: unknown action '\(arguments.last!)' (start|stop|restart|kill|status)")
    }
    return .avahi(target, action)
  }

  /// `K=V` with a shell-style variable name.
  static func isAssignment(_ text: String) -> Bool {
    guard let equals = text.firstIndex(of: "="), let first = text.first, first == "_" || (first.isASCII && first.isLetter) else { return false }
    return text[..<equals].allSatisfy { $0 == "_" || ($0.isASCII && ($0.isLetter || $0.isNumber)) }
  }

  /// 1-63 letters, digits and '-' (not at either end).
  static func isValidDNSLabel(_ text: String) -> Bool {
    (1...63).contains(text.count) && text.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-") } && text.first != "-"
      && text.last != "-"
  }
}
