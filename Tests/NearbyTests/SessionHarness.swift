import Nearby
import NearbyTestSupport
import Testing

/// A session on 127.0.0.1 without DNS-SD, running in a task of its own.
struct RunningSession: Sendable {
  let session: NearbySession
  let events: Recorder<SessionEvent>
  let task: Task<Void, any Error>
  let port: UInt16
  var peer: Peer { session.configuration.peer }
  var endpoint: Endpoint { Endpoint(host: "127.0.0.1", port: port) }

  static func start(
    _ name: String, policy: AcceptPolicy = .all, discovery: Bool = false, service: ServiceType? = nil, identity: PeerIdentity = .ephemeral(),
    configure: (inout SessionConfiguration) -> Void = { _ in }
  ) async throws -> RunningSession {
    var configuration = SessionConfiguration(identity: identity, name: try DisplayName(name))
    configuration.acceptPolicy = policy
    configuration.advertise = discovery
    configuration.browse = discovery
    if let service { configuration.serviceType = service }
    configuration.listenHost = discovery ? nil : "127.0.0.1"
    configure(&configuration)
    let session = try NearbySession(configuration: configuration)
    let events = Recorder(session.events)
    let task = Task { try await session.run() }
    guard let port = await session.waitUntilListening() else {
      throw WaitError(description: "session \(name) did not start")
    }
    return RunningSession(session: session, events: events, task: task, port: port)
  }

  /// Waits for an event.
  func expect<T: Sendable>(_ what: String, within timeout: Duration = .seconds(10), _ match: @escaping @Sendable (SessionEvent) -> T?) async throws
    -> T
  {
    try await events.next(within: timeout, what, match)
  }

  func stop() async throws {
    await session.shutdown()
    try await task.value
  }
}

/// Connects two sessions: `a` invites `b` by address, `b` accepts (policy all).
func connect(_ a: RunningSession, _ b: RunningSession) async throws {
  await a.session.invite(endpoints: [b.endpoint])
  _ = try await a.expect("\(b.peer.name) connected") { if case .connected(let p, _) = $0, p.id == b.peer.id { p } else { nil } }
  _ = try await b.expect("\(a.peer.name) connected") { if case .connected(let p, _) = $0, p.id == a.peer.id { p } else { nil } }
}
