/// The options of `nearby lab`, as given.
public struct LabOptions: Sendable, Equatable {
  /// `--hosts a,b,c`, split.
  public var hosts: [String] = []
  public var loopback = false
  /// `--segments` values, each `a,b` (several per value when separated by spaces).
  public var segments: [String] = []
  /// `--scripts DIR`, absolute.
  public var scriptsDirectory: String?
  public var timeout: Duration = .seconds(120)
  /// The command after `--`.
  public var command: [String] = []

  public init() {}
}

/// What `nearby lab` will build and run: the network, and what each host runs.
///
/// Pure: the files of the scripts directory are given, so every rule is testable.
public struct LabPlan: Sendable, Equatable {
  public enum Network: Sendable, Equatable {
    /// Every host shares one loopback network (one namespace).
    case loopback
    /// Each host in its own namespace on these veth segments (`lan up ID SEG...`).
    case segments([[String]])
  }

  public enum Role: Sendable, Equatable {
    /// `nearby chat --script PATH` (finishes; its exit code is the host's result).
    case script(path: String)
    /// A shell command from `HOST.cmd`: a service, stopped once the scripts are done.
    case service(command: String)
    /// The command given after `--` (finishes, like a script).
    case command([String])
    /// Nothing: the host is part of the network only.
    case idle
  }

  public struct Host: Sendable, Equatable {
    public var name: String
    public var role: Role

    public init(name: String, role: Role) {
      self.name = name
      self.role = role
    }

    /// Whether the lab waits for it to end (scripts and commands) rather than stopping it
    /// when the others are done (services).
    public var runsToCompletion: Bool {
      switch role {
      case .script, .command: true
      case .service, .idle: false
      }
    }

    /// The command line the host runs, `{host}` replaced by its name; nil when idle.
    /// - Parameters:
    ///   - nearby: the path of the `nearby` executable.
    ///   - stateDirectory: the host's own state directory.
    public func arguments(nearby: String, stateDirectory: String) -> [String]? {
      switch role {
      case .script(let path): [nearby, "chat", "--name", name, "--script", path, "--state-dir", stateDirectory]
      case .service(let command): ["/bin/sh", "-c", command.replacing("{host}", with: name)]
      case .command(let arguments): arguments.map { $0.replacing("{host}", with: name) }
      case .idle: nil
      }
    }
  }

  public var network: Network
  public var hosts: [Host]
  public var timeout: Duration
  /// `DIR/faults`, when the scripts directory has one (see ``FaultScript``).
  public var faults: String?

  public init(network: Network, hosts: [Host], timeout: Duration, faults: String? = nil) {
    self.network = network
    self.hosts = hosts
    self.timeout = timeout
    self.faults = faults
  }

  /// The variables that give every host's addresses to each host's command:
  /// `NEARBY_LAB_ADDR_<HOST>` (its first segment's) and `NEARBY_LAB_ADDR_<HOST>_<SEGMENT#>`.
  public static func addressVariables(_ addresses: [String: [(segment: Int, address: String)]]) -> [String: String] {
    var variables: [String: String] = [:]
    for (host, list) in addresses {
      guard let first = list.min(by: { $0.segment < $1.segment }) else { continue }
      variables["NEARBY_LAB_ADDR_\(host)"] = first.address
      for entry in list { variables["NEARBY_LAB_ADDR_\(host)_\(entry.segment)"] = entry.address }
    }
    return variables
  }

  /// Host names become namespace and mDNS host names: letters and digits only.
  public static func isValidHostName(_ name: String) -> Bool {
    (1...24).contains(name.count) && name.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber) }
  }

  /// Works out the plan.
  /// - Parameters:
  ///   - files: the names of the files in `options.scriptsDirectory`.
  ///   - readFile: reads a file of that directory (for `HOST.cmd`).
  /// - Throws: ``LabUsageError`` saying what is wrong with the options and what to write.
  public static func make(_ options: LabOptions, files: [String] = [], readFile: (String) -> String? = { _ in nil }) throws(LabUsageError)
    -> LabPlan
  {
    if let first = options.command.first, first.contains(","), first.split(separator: ",").allSatisfy({ isValidHostName(String($0)) }) {
      throw LabUsageError(
        "'\(first)' looks like a segment, not a command: give each segment its own --segments (--segments a,r --segments r,c); the command goes after --"
      )
    }
    var hosts: [String] = []
    for name in options.hosts {
      guard isValidHostName(name) else { throw LabUsageError("invalid host name '\(name)' in --hosts: use 1-24 letters and digits") }
      guard !hosts.contains(name) else { throw LabUsageError("host '\(name)' appears twice in --hosts") }
      hosts.append(name)
    }
    let segments = try parseSegments(options.segments)
    if options.loopback && !segments.isEmpty {
      throw LabUsageError("--loopback and --segments exclude each other: on loopback every host shares one network")
    }
    if !segments.isEmpty {
      var onSegments: [String] = []
      for name in segments.joined() where !onSegments.contains(name) { onSegments.append(name) }
      if !hosts.isEmpty {
        if let missing = hosts.first(where: { !onSegments.contains($0) }) {
          throw LabUsageError("host '\(missing)' is in --hosts but on no segment: add it to a --segments")
        }
        if let extra = onSegments.first(where: { !hosts.contains($0) }) {
          throw LabUsageError("host '\(extra)' is on a segment but not in --hosts: add it, or leave --hosts out")
        }
      }
      hosts = onSegments
    }

    // The scripts directory: HOST.script and HOST.cmd.
    var scripts: [String: String] = [:]
    var services: [String: String] = [:]
    if let directory = options.scriptsDirectory {
      for file in files.sorted() {
        let (base, suffix) = split(file)
        guard suffix == "script" || suffix == "cmd" else { continue }
        guard isValidHostName(base) else {
          throw LabUsageError("\(directory)/\(file): '\(base)' is not a valid host name (1-24 letters and digits)")
        }
        if suffix == "script" {
          scripts[base] = directory + "/" + file
        } else {
          guard let text = readFile(file) else { throw LabUsageError("cannot read \(directory)/\(file)") }
          let command = commandText(text)
          guard !command.isEmpty else { throw LabUsageError("\(directory)/\(file) has no command (only comments or blank lines)") }
          services[base] = command
        }
      }
      if let both = scripts.keys.sorted().first(where: { services[$0] != nil }) {
        throw LabUsageError("\(directory) has both \(both).script and \(both).cmd: a host runs one or the other")
      }
      let named = Array(Set(scripts.keys).union(services.keys)).sorted()
      if hosts.isEmpty {
        hosts = named
      } else if let stray = named.first(where: { !hosts.contains($0) }) {
        throw LabUsageError("\(directory) has a file for '\(stray)', which is not one of the hosts (\(hosts.joined(separator: ", ")))")
      }
      if named.isEmpty && options.command.isEmpty {
        throw LabUsageError("\(directory) has no HOST.script or HOST.cmd files, and no command was given after --")
      }
    }
    guard !hosts.isEmpty else {
      throw LabUsageError("no hosts: give --hosts A,B,... (or --segments, or --scripts DIR with HOST.script files)")
    }
    guard options.scriptsDirectory != nil || !options.command.isEmpty else {
      throw LabUsageError("nothing to run: give --scripts DIR, or a command after -- (for example: -- nearby browse --timeout 3)")
    }
    let planned = hosts.map { name -> Host in
      if let path = scripts[name] { return Host(name: name, role: .script(path: path)) }
      if let command = services[name] { return Host(name: name, role: .service(command: command)) }
      return Host(name: name, role: options.command.isEmpty ? .idle : .command(options.command))
    }
    let faults = options.scriptsDirectory.flatMap { directory in files.contains("faults") ? directory + "/faults" : nil }
    return LabPlan(
      network: options.loopback ? .loopback : .segments(segments.isEmpty ? [hosts] : segments), hosts: planned, timeout: options.timeout,
      faults: faults)
  }

  private static func parseSegments(_ values: [String]) throws(LabUsageError) -> [[String]] {
    var segments: [[String]] = []
    for value in values {
      for segment in value.split(whereSeparator: \.isWhitespace) {
        let members = segment.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
        for name in members {
          guard isValidHostName(name) else {
            throw LabUsageError("invalid segment '\(segment)': write host names (1-24 letters and digits) separated by commas, e.g. a,b")
          }
        }
        guard Set(members).count == members.count else { throw LabUsageError("segment '\(segment)' names a host twice") }
        segments.append(members)
      }
    }
    return segments
  }

  private static func split(_ file: String) -> (String, String) {
    guard let dot = file.lastIndex(of: ".") else { return (file, "") }
    return (String(file[..<dot]), String(file[file.index(after: dot)...]))
  }

  /// The command of a `.cmd` file: its lines without comment lines and blank lines.
  static func commandText(_ text: String) -> String {
    text.split(separator: "\n").map { $0.trimmingSpaces }.filter { !$0.isEmpty && !$0.hasPrefix("#") }.joined(separator: "\n")
  }
}

/// Options of `nearby lab` that do not fit together.
public struct LabUsageError: Error, Sendable, Equatable, CustomStringConvertible {
  public var message: String
  public init(_ message: String) { self.message = message }
  public var description: String { message }
}

extension Substring {
  var trimmingSpaces: String {
    var text = self
    while let first = text.first, first.isWhitespace { text = text.dropFirst() }
    while let last = text.last, last.isWhitespace { text = text.dropLast() }
    return String(text)
  }
}
