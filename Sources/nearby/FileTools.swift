import Nearby
import NearbyChat
import NearbyCommandLine

/// `nearby send`: files and folders to a peer, until it verified each one.
struct SendTool: Tool {
  static let spec = NearbyCommands.Send.spec
  typealias Options = NearbyCommands.Send

  let setup: SessionSetup
  let options: FileSendCommand.Options
  let rate: UInt64?

  init(_ parsed: ParsedCommand, environment: ProcessEnvironment) throws(CommandLineError) {
    let name = try parsed.value(Options.name) ?? (try? DisplayName(environment.hostName)) ?? (try! DisplayName("nearby"))
    setup = try SessionSetup(parsed, environment: environment, name: name)
    guard let target = try parsed.value(Options.to) else { throw .usage("--to NAME|ID is required: the peer to send to", path: parsed.path) }
    let paths = parsed.variadic("paths")
    guard !paths.isEmpty else { throw .usage("give at least one file or folder to send", path: parsed.path) }
    options = FileSendCommand.Options(
      target: target, paths: paths, connect: try parsed.values(Options.connect), timeout: try parsed.value(Options.timeout, default: .seconds(60)),
      json: parsed.isSet(NearbyCommands.Common.json))
    rate = try parsed.value(Options.rate)
  }

  func run(signals: AsyncStream<Int32>?) async -> Int32 {
    let rate = self.rate
    guard
      let (identity, session) = setup.makeSession({ configuration in
        configuration.maximumFileRate = rate
        // Advertised, so that relays that invite whom they find (--connect-found) can join it
        // to peers on other segments. Invitations are answered by the command (only relays').
        configuration.acceptPolicy = .ask
        configuration.acceptFiles = .none
      })
    else { return 1 }
    defer { withExtendedLifetime(identity) {} }
    return await FileSendCommand(session: session, options: options).run(signals: signals)
  }
}

/// `nearby receive`: one offer of files, saved; the paths printed.
struct ReceiveTool: Tool {
  static let spec = NearbyCommands.Receive.spec
  typealias Options = NearbyCommands.Receive

  let setup: SessionSetup
  let options: FileReceiveCommand.Options

  init(_ parsed: ParsedCommand, environment: ProcessEnvironment) throws(CommandLineError) {
    let name = try parsed.value(Options.name) ?? (try? DisplayName(environment.hostName)) ?? (try! DisplayName("nearby"))
    setup = try SessionSetup(parsed, environment: environment, name: name)
    guard
      let downloads = try parsed.value(NearbyCommands.Common.downloads)
        ?? NearbySession.defaultDownloadsDirectory(environment: environment.variables)
    else { throw .usage("there is no download folder (HOME is not set): give --downloads DIR", path: parsed.path) }
    options = FileReceiveCommand.Options(
      from: try parsed.value(Options.from), downloads: downloads, acceptFiles: try parsed.value(NearbyCommands.Common.acceptFiles, default: .ask),
      timeout: try parsed.value(Options.timeout), json: parsed.isSet(NearbyCommands.Common.json), only: try parsed.values(Options.only))
  }

  func run(signals: AsyncStream<Int32>?) async -> Int32 {
    let downloads = options.downloads
    guard
      let (identity, session) = setup.makeSession({ configuration in
        // Invitations and offers are answered by the command (only --from's).
        configuration.acceptPolicy = .ask
        configuration.acceptFiles = .ask
        configuration.downloadsDirectory = downloads
      })
    else { return 1 }
    defer { withExtendedLifetime(identity) {} }
    return await FileReceiveCommand(session: session, options: options).run(signals: signals)
  }
}
