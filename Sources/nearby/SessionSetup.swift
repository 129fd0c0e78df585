import Nearby
import NearbyCommandLine
import NearbySystem

/// What `nearby chat`, `relay`, `send` and `receive` share: the identity in the state directory and a
/// session made from it.
struct SessionSetup: Sendable {
  /// `--state-dir`, or the default one (which fails without HOME).
  let stateDirectory: Result<String, IdentityError>
  let name: DisplayName
  let service: ServiceType
  let port: UInt16
  /// `--reconnect-grace`.
  let reconnectGrace: Duration

  /// Opens the identity and makes the session.
  /// - Returns: both (keep the identity alive while the session runs: it holds the lock on
  ///   the state directory), or nil after printing what went wrong and how to fix it.
  func makeSession(_ configure: (inout SessionConfiguration) -> Void) -> (PeerIdentity, NearbySession)? {
    let identity: PeerIdentity
    do {
      identity = try PeerIdentity(directory: stateDirectory.get())
    } catch {
      _ = failure("\(error) (use --state-dir DIR or NEARBY_STATE_DIR)")
      return nil
    }
    if let notice = identity.notice { OutputWriter.standardError.line("nearby: \(notice)") }
    var configuration = SessionConfiguration(identity: identity, name: name)
    configuration.serviceType = service
    configuration.listenPort = port
    configuration.reconnectGrace = reconnectGrace
    configure(&configuration)
    do {
      return (identity, try NearbySession(configuration: configuration))
    } catch {
      _ = failure("\(error)")
      return nil
    }
  }
}

extension SessionSetup {
  /// The state directory `--state-dir` names, or the default one under `suffix`.
  static func stateDirectory(_ explicit: String?, environment: [String: String], suffix: String = "") -> Result<String, IdentityError> {
    if let explicit { return .success(explicit) }
    return Result { () throws(IdentityError) in try PeerIdentity.defaultDirectory(environment: environment) + suffix }
  }
}

extension SessionSetup {
  /// The options every session-making command shares (`--state-dir`, `--service`, `--port`,
  /// `--reconnect-grace`), with `name` or else the host name.
  /// - Parameter stateSuffix: appended to the default state directory (the relay's own).
  init(_ parsed: ParsedCommand, environment: ProcessEnvironment, name: DisplayName, stateSuffix: String = "") throws(CommandLineError) {
    self.init(
      stateDirectory: Self.stateDirectory(
        try parsed.value(NearbyCommands.Common.stateDirectory), environment: environment.variables, suffix: stateSuffix),
      name: name, service: try parsed.value(NearbyCommands.Common.service, default: .default),
      port: try parsed.value(NearbyCommands.Common.port, default: 0),
      reconnectGrace: try parsed.value(NearbyCommands.Common.reconnectGrace, default: .seconds(30)))
  }
}
