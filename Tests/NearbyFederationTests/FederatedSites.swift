import Nearby
import NearbyCore
import NearbyFederation
import NearbyLab
import NearbyTestSupport
import Testing

/// A session on 127.0.0.1 without DNS-SD, running in a task of its own (a peer, or a relay
/// with its federation).
struct SiteSession: Sendable {
  let session: NearbySession
  let events: Recorder<SessionEvent>
  let task: Task<Void, any Error>
  let port: UInt16
  let federation: Federation?
  let federationEvents: Recorder<FederationEvent>?
  let federationTask: Task<Void, Never>?
  var peer: Peer { session.configuration.peer }
  var endpoint: Endpoint { Endpoint(host: "127.0.0.1", port: port) }

  /// A peer (not a relay), with `identity` (give the same one again for the same peer).
  static func peer(_ name: String, identity: PeerIdentity = .ephemeral()) async throws -> SiteSession {
    var configuration = SessionConfiguration(identity: identity, name: try DisplayName(name))
    configuration.acceptPolicy = .all
    configuration.advertise = false
    configuration.browse = false
    configuration.listenHost = "127.0.0.1"
    return try await start(configuration, federation: nil)
  }

  /// A federated relay at `site`, joined to the NATS servers at `servers`; returns once its
  /// federation is ready.
  static func relay(_ name: String, site: String, servers: [String], configure: (inout FederationConfiguration) -> Void = { _ in })
    async throws -> SiteSession
  {
    var configuration = SessionConfiguration(identity: .ephemeral(), name: try DisplayName(name))
    configuration.isRelay = true
    configuration.acceptPolicy = .all
    configuration.advertise = false
    configuration.browse = false
    configuration.listenHost = "127.0.0.1"
    configuration.federation = FederationSettings(site: site)
    var federation = FederationConfiguration(nats: NATSSettings(servers: servers, name: name), site: site)
    federation.presenceTTL = .seconds(6)
    configure(&federation)
    let relay = try await start(configuration, federation: federation)
    _ = try await relay.federationEvents!.next(within: .seconds(20), "federation ready") { if case .ready = $0 { true } else { nil } }
    return relay
  }

  private static func start(_ configuration: SessionConfiguration, federation settings: FederationConfiguration?) async throws -> SiteSession {
    let session = try NearbySession(configuration: configuration)
    let events = Recorder(session.events)
    var federation: Federation?
    var federationEvents: Recorder<FederationEvent>?
    var federationTask: Task<Void, Never>?
    if let settings {
      let made = await Federation(configuration: settings, session: session)
      federation = made
      federationEvents = Recorder(made.events)
      federationTask = Task { await made.run() }
    }
    let task = Task { try await session.run() }
    guard let port = await session.waitUntilListening() else {
      throw WaitError(description: "session \(configuration.peer.name) did not start")
    }
    return SiteSession(
      session: session, events: events, task: task, port: port, federation: federation, federationEvents: federationEvents,
      federationTask: federationTask)
  }

  func expect<T: Sendable>(_ what: String, within timeout: Duration = .seconds(15), _ match: @escaping @Sendable (SessionEvent) -> T?) async throws
    -> T
  {
    try await events.next(within: timeout, what, match)
  }

  /// Invites `relay` and waits until both are connected.
  func join(_ relay: SiteSession) async throws {
    await session.invite(endpoints: [relay.endpoint])
    _ = try await expect("\(relay.peer.name) connected") { if case .connected(let p, _) = $0, p.id == relay.peer.id { p } else { nil } }
  }

  func stop() async throws {
    await session.shutdown()
    try await task.value
    federation?.shutdown()
    await federationTask?.value
  }

  func message(_ what: String, from sender: PeerID) async throws -> ReceivedMessage {
    try await expect(what) { if case .message(let m) = $0, m.from.id == sender { m } else { nil } }
  }
}
