import Nearby
import NearbyChat
import NearbyCommandLine
import NearbyScript
import NearbySystem
import NearbyTerminalUI

/// `nearby chat`: the terminal chat at a terminal, line mode (text or JSON) through pipes,
/// or a chat script.
struct ChatTool: Tool {
  static let spec = NearbyCommands.Chat.spec
  typealias Options = NearbyCommands.Chat

  let setup: SessionSetup
  let acceptPolicy: AcceptPolicy
  let allowList: Set<PeerID>
  let info: DiscoveryInfo
  let connect: [Endpoint]
  let invitationTimeout: Duration
  let json: Bool
  let plain: Bool
  let color: Bool
  let terminal: TerminalChat.Options
  let script: String?
  let interactive: Bool
  let acceptFiles: FileAcceptPolicy
  let downloads: String?

  init(_ parsed: ParsedCommand, environment: ProcessEnvironment) throws(CommandLineError) {
    let name = try parsed.value(Options.name) ?? (try? DisplayName(environment.hostName)) ?? (try! DisplayName("nearby"))
    setup = try SessionSetup(parsed, environment: environment, name: name)
    acceptPolicy = try parsed.value(Options.accept, default: .ask)
    allowList = Set(try parsed.values(Options.allow).flatMap { $0 })
    let infoArguments = try parsed.values(Options.info)
    do {
      info = try DiscoveryInfo(arguments: infoArguments)
      _ = try NearbyAdvertiser(peer: Peer(id: PeerIdentity.ephemeral().peerID, name: name, info: info), port: 1)
    } catch {
      throw .usage("invalid --info: \(error)", path: parsed.path)
    }
    connect = try parsed.values(Options.connect)
    invitationTimeout = try parsed.value(Options.inviteTimeout, default: .seconds(30))
    json = parsed.isSet(NearbyCommands.Common.json)
    plain = parsed.isSet(Options.plain)
    color = !parsed.isSet(Options.noColor) && (environment["NO_COLOR"] ?? "").isEmpty
    let extendedColors = (environment["TERM"] ?? "").contains("256color") || !(environment["COLORTERM"] ?? "").isEmpty
    terminal = TerminalChat.Options(
      settings: .init(
        color: color, extendedColors: extendedColors, bell: !parsed.isSet(Options.noBell),
        scrollback: try parsed.value(Options.scrollback, default: 10_000)),
      history: !parsed.isSet(Options.noHistory))
    script = try parsed.value(Options.script)
    interactive = environment.isInteractiveTerminal
    acceptFiles = try parsed.value(NearbyCommands.Common.acceptFiles, default: .ask)
    downloads = try parsed.value(NearbyCommands.Common.downloads) ?? NearbySession.defaultDownloadsDirectory(environment: environment.variables)
  }

  func run(signals: AsyncStream<Int32>?) async -> Int32 {
    // A script is read and checked before anything starts (a bad one: exit 64).
    var loaded: (ChatScript, file: String)?
    if let script {
      switch await Self.load(script) {
      case .success(let value): loaded = value
      case .failure(let code): return code.value
      }
    }
    guard
      let (identity, session) = setup.makeSession({ configuration in
        configuration.acceptPolicy = acceptPolicy
        configuration.allowList = allowList
        configuration.discoveryInfo = info
        configuration.invitationTimeout = invitationTimeout
        configuration.acceptFiles = acceptFiles
        configuration.downloadsDirectory = downloads
      })
    else { return 1 }
    defer { withExtendedLifetime(identity) {} }
    // Line mode writes through a bounded queue on a thread of its own: a reader that stops
    // reading (a pipe, a paused terminal) holds up the chat, never a thread of the pool, and
    // costs at most the queue.
    let output = OutputWriter(fd: 1, queueLimit: Self.outputQueueLimit)
    if let (script, file) = loaded {
      let code = await ScriptedChat.run(script: script, file: file, session: session, json: json, connect: connect, signals: signals, output: output)
      await output.drain()
      return code
    }
    if !json && !plain && interactive {
      if let code = await TerminalChat.run(
        session: session, connect: connect, options: terminal, stateDirectory: identity.directory, signals: signals)
      {
        return code
      }
    }
    let chat = LineChat(session: session, output: PlainOutput(writer: output, json: json), connect: connect)
    let input = LineReader.checkedLines(maximumLineBytes: LineChat.maximumLineBytes).map { @Sendable in ChatInput($0) }
    let code = await chat.run(input: input, signals: signals)
    // What is queued goes out before the exit, unless the reader took nothing for 5 s.
    await output.drain()
    return code
  }

  /// The output line mode queues before the chat stops taking events: 1 MiB (a message of
  /// the largest size still fits, as the queue takes one more line once it has room).
  static let outputQueueLimit = 1 << 20

  struct ExitCode: Error { let value: Int32 }

  /// Reads and parses a script; one that cannot be read or parsed gives exit code 64.
  static func load(_ path: String) async -> Result<(ChatScript, file: String), ExitCode> {
    let file = path == "-" ? "<stdin>" : path
    do throws(ChatScriptFileError) {
      let text = try await ChatScriptFile.read(path)
      do throws(ChatScriptErrors) {
        return .success((try ChatScript.parse(text), file))
      } catch {
        OutputWriter.standardError.line(error.formatted(file: file))
        OutputWriter.standardError.line(
          "nearby chat: the script \(file) has \(error.errors.count) error\(error.errors.count == 1 ? "" : "s"); see the grammar in the README (Scripted peers)"
        )
        return .failure(ExitCode(value: 64))
      }
    } catch {
      OutputWriter.standardError.write(usageText("invalid --script: \(error)", path: ["nearby", "chat"]))
      return .failure(ExitCode(value: 64))
    }
  }
}
