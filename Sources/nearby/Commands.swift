import CNearbySystem
import Nearby
import NearbyBench
import NearbyChat
import NearbyCommandLine
import NearbyLab
import NearbyRelay
import NearbyScript
import NearbySystem
import NearbyTerminalUI
import NearbyTransport

#if canImport(Glibc)
  import Glibc
#endif

func currentEnvironment() -> [String: String] {
  var result: [String: String] = [:]
  var pointer = environ
  while let entry = pointer.pointee {
    let text = String(cString: entry)
    if let equals = text.firstIndex(of: "=") {
      result[String(text[..<equals])] = String(text[text.index(after: equals)...])
    }
    pointer += 1
  }
  return result
}

func terminalWidth() -> Int {
  if let columns = currentEnvironment()["COLUMNS"].flatMap(Int.init), columns > 20 { return min(columns, 120) }
  return 80
}

func hostName() -> String {
  var buffer = [CChar](repeating: 0, count: 256)
  gethostname(&buffer, buffer.count)
  let name = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
  let first = name.split(separator: ".").first.map(String.init) ?? "nearby"
  return String(first.utf8.prefix(63)) ?? "nearby"
}

func serviceType(_ command: ParsedCommand) -> ServiceType {
  guard let text = command.value("service") else { return .default }
  do {
    return try ServiceType(text)
  } catch {
    usageError("invalid --service: \(error)")
  }
}

func displayName(_ text: String) -> DisplayName {
  do {
    return try DisplayName(text)
  } catch {
    usageError("invalid --name: \(error)")
  }
}

/// `HOST:PORT` or `[IPv6]:PORT` with a numeric host (`localhost` means 127.0.0.1).
func endpoint(_ text: String) -> Endpoint? {
  var host: Substring
  var port: Substring
  if text.hasPrefix("["), let close = text.firstIndex(of: "]") {
    host = text[text.index(after: text.startIndex)..<close]
    let rest = text[text.index(after: close)...]
    guard rest.hasPrefix(":") else { return nil }
    port = rest.dropFirst()
  } else {
    guard let colon = text.lastIndex(of: ":") else { return nil }
    host = text[..<colon]
    port = text[text.index(after: colon)...]
  }
  if host == "localhost" { host = "127.0.0.1" }
  guard let number = UInt16(port), number > 0, SocketAddressCheck.isNumeric(String(host)) else { return nil }
  return Endpoint(host: String(host), port: number)
}

enum SocketAddressCheck {
  static func isNumeric(_ host: String) -> Bool {
    var v4 = in_addr()
    var v6 = in6_addr()
    let bare = host.split(separator: "%").first.map(String.init) ?? host
    return inet_pton(AF_INET, bare, &v4) == 1 || inet_pton(AF_INET6, bare, &v6) == 1
  }
}

func runChat(_ command: ParsedCommand) async -> Int32 {
  let name = displayName(command.value("name") ?? hostName())
  var script: (ChatScript, file: String)?
  if let path = command.value("script") {
    script = await loadScript(path)
  }
  let stateDirectory = command.value("state-dir") ?? IdentityStore.defaultDirectory(environment: currentEnvironment())
  var allowList: Set<PeerID> = []
  for item in command.values("allow").flatMap({ $0.split(separator: ",") }) {
    guard let id = PeerID(hex: item.trimmingCharacters()) else { usageError("invalid --allow: '\(item)' is not a peer id (32 hex digits)") }
    allowList.insert(id)
  }
  let info: DiscoveryInfo
  do {
    info = try DiscoveryInfo(arguments: command.values("info"))
  } catch {
    usageError("invalid --info: \(error)")
  }
  var endpoints: [Endpoint] = []
  for text in command.values("connect") {
    guard let parsed = endpoint(text) else {
      usageError("invalid --connect '\(text)': write HOST:PORT with a numeric address, for example 192.0.2.7:4000 or [fe80::1%eth0]:4000")
    }
    endpoints.append(parsed)
  }
  var port: UInt16 = 0
  if let text = command.value("port") {
    guard let value = UInt16(text) else { usageError("invalid --port '\(text)': give a number from 0 to 65535") }
    port = value
  }
  var invitationTimeout = Duration.seconds(30)
  if let text = command.value("invite-timeout") {
    guard let seconds = Double(text), seconds >= 0.1, seconds <= 600 else {
      usageError("invalid --invite-timeout '\(text)': give a number of seconds from 0.1 to 600")
    }
    invitationTimeout = .milliseconds(Int64(seconds * 1000))
  }
  let identity: IdentityStore
  do {
    identity = try IdentityStore(directory: stateDirectory)
  } catch {
    OutputWriter.standardError.line("Error: \(error)")
    return 1
  }
  var configuration = SessionConfiguration(peer: Peer(id: identity.peerID, name: name))
  configuration.serviceType = serviceType(command)
  configuration.acceptPolicy = AcceptPolicy(rawValue: command.value("accept") ?? "ask") ?? .ask
  configuration.allowList = allowList
  configuration.discoveryInfo = info
  configuration.listenPort = port
  configuration.invitationTimeout = invitationTimeout
  do {
    _ = try PeerAdvertisement(peer: configuration.peer, info: info).txtRecord()
  } catch {
    usageError("invalid --info: \(error)")
  }
  let session: NearbySession
  do {
    session = try NearbySession(configuration: configuration)
  } catch {
    OutputWriter.standardError.line("Error: \(error)")
    return 1
  }
  let json = command.flag("json")
  if let (script, file) = script {
    let code = await ScriptedChat.run(script: script, file: file, session: session, json: json, connect: endpoints, signals: signals?.signals)
    withExtendedLifetime(identity) {}
    return code
  }
  if !json && !command.flag("plain") && isInteractiveTerminal() {
    let color = !command.flag("no-color") && (currentEnvironment()["NO_COLOR"] ?? "").isEmpty
    if let code = await TerminalChat.run(
      session: session, connect: endpoints, color: color, stateDirectory: stateDirectory, signals: signals?.signals)
    {
      withExtendedLifetime(identity) {}
      return code
    }
  }
  let input = LineReader.lines()
  let chat = LineChat(session: session, output: PlainOutput(json: json), connect: endpoints)
  let code = await chat.run(input: input, signals: signals?.signals)
  withExtendedLifetime(identity) {}
  return code
}

/// Reads and parses a script; a script that cannot be read or parsed is a usage error.
func loadScript(_ path: String) async -> (ChatScript, file: String) {
  let file = path == "-" ? "<stdin>" : path
  do throws(ChatScriptFileError) {
    let text = try await ChatScriptFile.read(path)
    do throws(ChatScriptErrors) {
      return (try ChatScript.parse(text), file)
    } catch {
      OutputWriter.standardError.line(error.formatted(file: file))
      OutputWriter.standardError.line(
        "nearby chat: the script \(file) has \(error.errors.count) error\(error.errors.count == 1 ? "" : "s"); see the grammar in the README (Scripted peers)"
      )
      exit(64)
    }
  } catch {
    usageError("invalid --script: \(error)")
  }
}

/// The terminal chat needs a terminal on both stdin and stdout that can move its cursor.
func isInteractiveTerminal() -> Bool {
  guard isatty(0) == 1, isatty(1) == 1 else { return false }
  let term = currentEnvironment()["TERM"] ?? ""
  return !term.isEmpty && term != "dumb"
}

func runBrowse(_ command: ParsedCommand) async -> Int32 {
  var timeout: Duration?
  if let text = command.value("timeout") {
    guard let seconds = Double(text), seconds > 0, seconds < 1e9 else {
      usageError("invalid --timeout '\(text)': give a number of seconds, for example 5 or 0.5")
    }
    timeout = .milliseconds(Int64(seconds * 1000))
  }
  return await BrowseCommand.run(service: serviceType(command), timeout: timeout, json: command.flag("json"), signals: signals?.signals)
}

func runRelay(_ command: ParsedCommand) async -> Int32 {
  let name = displayName(command.value("name") ?? String("relay-\(hostName())".utf8.prefix(63))!)
  let stateDirectory = command.value("state-dir") ?? IdentityStore.defaultDirectory(environment: currentEnvironment()) + "/relay"
  guard let level = RelayService.LogLevel(name: command.value("log-level") ?? "info") else { usageError("invalid --log-level") }
  var statsInterval: Duration? = .seconds(60)
  if let text = command.value("stats-interval") {
    guard let seconds = Double(text), seconds >= 0, seconds < 1e7 else {
      usageError("invalid --stats-interval '\(text)': give a number of seconds (0: never)")
    }
    statsInterval = seconds == 0 ? nil : .milliseconds(Int64(seconds * 1000))
  }
  var maximumPeers: Int?
  if let text = command.value("max-peers") {
    guard let value = Int(text), value > 0 else { usageError("invalid --max-peers '\(text)': give a positive number") }
    maximumPeers = value
  }
  var port: UInt16 = 0
  if let text = command.value("port") {
    guard let value = UInt16(text) else { usageError("invalid --port '\(text)': give a number from 0 to 65535") }
    port = value
  }
  var endpoints: [Endpoint] = []
  for text in command.values("connect") {
    guard let parsed = endpoint(text) else { usageError("invalid --connect '\(text)': write HOST:PORT with a numeric address") }
    endpoints.append(parsed)
  }
  let allowFile = command.value("allow")
  var allowList: Set<PeerID> = []
  if let allowFile {
    do {
      allowList = try RelayService.readAllowList(allowFile)
    } catch {
      OutputWriter.standardError.line("Error: \(error)")
      return 1
    }
  }
  let identity: IdentityStore
  do {
    identity = try IdentityStore(directory: stateDirectory)
  } catch {
    OutputWriter.standardError.line("Error: \(error)")
    return 1
  }
  var configuration = SessionConfiguration(peer: Peer(id: identity.peerID, name: name))
  configuration.serviceType = serviceType(command)
  configuration.isRelay = true
  configuration.acceptPolicy = allowFile != nil || command.value("accept") == "none" ? .none : .all
  configuration.allowList = allowList
  configuration.maximumPeers = maximumPeers
  configuration.connectFound = command.flag("connect-found")
  configuration.listenPort = port
  // A relay serves many peers: allow more handshakes at once than a chat does.
  configuration.maximumPendingConnections = 256
  let session: NearbySession
  do {
    session = try NearbySession(configuration: configuration)
  } catch {
    OutputWriter.standardError.line("Error: \(error)")
    return 1
  }
  let relay = RelayService(session: session, level: level, statsInterval: statsInterval, allowFile: allowFile, connect: endpoints)
  let code = await relay.run(signals: signals?.signals)
  withExtendedLifetime(identity) {}
  return code
}

func runBench(_ command: ParsedCommand) async -> Int32 {
  // Ctrl-C or SIGTERM stop a benchmark at once (its peer process dies with it).
  if let signals = signals?.signals {
    Task.detached {
      for await signal in signals where signal == SIGINT || signal == SIGTERM { exit(128 + signal) }
    }
  }
  if let peers = currentEnvironment()["NEARBY_BENCH_PEERS"] {
    _ = nearby_die_with_parent()
    return await BenchRunner.runPeerProcess(peers)
  }
  let runner = BenchRunner(quick: command.flag("quick"), only: Set(command.values("only"))) { OutputWriter.standardError.line($0) }
  do {
    let results = try await runner.run()
    OutputWriter.standardOutput.write(command.flag("json") ? ResultTable.json(results) : ResultTable.text(results))
    return 0
  } catch {
    OutputWriter.standardError.line("Error: \(error)")
    return 1
  }
}

func runLab(_ command: ParsedCommand) async -> Int32 {
  var options = LabOptions()
  options.hosts = command.value("hosts").map { $0.split(separator: ",").map { $0.trimmingCharacters() } } ?? []
  options.loopback = command.flag("loopback")
  options.segments = command.values("segments")
  options.command = command.variadic("command")
  if let text = command.value("timeout") {
    guard let seconds = Double(text), seconds > 0, seconds < 1e6 else {
      usageError("invalid --timeout '\(text)': give a number of seconds, for example 60 or 0.5")
    }
    options.timeout = .milliseconds(Int64(seconds * 1000))
  }
  var files: [String] = []
  if let directory = command.value("scripts") {
    let absolute = LabFiles.absolute(directory)
    guard LabFiles.isDirectory(absolute), let listed = LabFiles.list(absolute) else {
      usageError("invalid --scripts '\(directory)': not a readable directory")
    }
    options.scriptsDirectory = absolute
    files = listed
  }
  let plan: LabPlan
  do throws(LabUsageError) {
    plan = try LabPlan.make(options, files: files) { LabFiles.read(options.scriptsDirectory! + "/" + $0) }
  } catch {
    usageError(error.message)
  }
  // Every script is checked before anything is built.
  let problems = Lab.scriptErrors(plan)
  if !problems.isEmpty {
    for problem in problems { OutputWriter.standardError.line(problem) }
    let count = problems.count
    OutputWriter.standardError.line(
      "nearby lab: \(count) script\(count == 1 ? " has" : "s have") errors; see the grammar in the README (Scripted peers)")
    return 64
  }
  let lab = Lab(
    plan: plan, arguments: Array(CommandLine.arguments.dropFirst()), environment: currentEnvironment(),
    executable: LabFiles.executablePath(fallback: CommandLine.arguments[0]))
  return await lab.run(signals: signals?.signals)
}

extension Substring {
  func trimmingCharacters() -> String {
    var text = self
    while let first = text.first, first.isWhitespace { text = text.dropFirst() }
    while let last = text.last, last.isWhitespace { text = text.dropLast() }
    return String(text)
  }
}
