import Nearby
import NearbyCommandLine
import NearbySystem

/// What `nearby chat` and `nearby relay` share: the identity in the state directory and a
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
