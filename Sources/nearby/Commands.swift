import Nearby
import NearbyChat
import NearbyCommandLine

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
  do {
    _ = try PeerAdvertisement(peer: configuration.peer, info: info).txtRecord()
  } catch {
    usageError("invalid --info: \(error)")
  }
  let session = NearbySession(configuration: configuration)
  let json = command.flag("json")
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
  OutputWriter.standardError.line("Error: nearby relay is not available in this build yet")
  return 70
}

func runBench(_ command: ParsedCommand) async -> Int32 {
  OutputWriter.standardError.line("Error: nearby bench is not available in this build yet")
  return 70
}

func runLab(_ command: ParsedCommand) async -> Int32 {
  OutputWriter.standardError.line("Error: nearby lab is not available in this build yet")
  return 70
}

extension Substring {
  func trimmingCharacters() -> String {
    var text = self
    while let first = text.first, first.isWhitespace { text = text.dropFirst() }
    while let last = text.last, last.isWhitespace { text = text.dropLast() }
    return String(text)
  }
}
