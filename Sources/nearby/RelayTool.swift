import Nearby
import NearbyCommandLine
import NearbyFederation
import NearbyRelay

#if canImport(Glibc)
  import Glibc
#endif

/// `nearby relay`: forwards messages between peers and between LAN segments.
struct RelayTool: Tool {
  static let spec = NearbyCommands.Relay.spec
  typealias Options = NearbyCommands.Relay

  let setup: SessionSetup
  let level: RelayService.LogLevel
  let statsInterval: Duration?
  let maximumPeers: Int?
  let busyPoll: Duration?
  let connect: [Endpoint]
  let connectFound: Bool
  let allowFile: String?
  let acceptNone: Bool
  let federation: FederationConfiguration?

  init(_ parsed: ParsedCommand, environment: ProcessEnvironment) throws(CommandLineError) {
    let fallbackName = String("relay-\(environment.hostName)".utf8.prefix(63)) ?? "relay"
    setup = try SessionSetup(
      parsed, environment: environment, name: try parsed.value(Options.name) ?? (try? DisplayName(fallbackName)) ?? (try! DisplayName("relay")),
      stateSuffix: "/relay")
    level = RelayService.LogLevel(name: try parsed.value(Options.logLevel, default: "info")) ?? .info
    let interval = try parsed.value(Options.statsInterval, default: .seconds(60))
    statsInterval = interval == .zero ? nil : interval
    maximumPeers = try parsed.value(Options.maximumPeers)
    busyPoll = try parsed.value(Options.busyPoll).map { .microseconds($0) }
    connect = try parsed.values(Options.connect)
    connectFound = parsed.isSet(Options.connectFound)
    allowFile = try parsed.value(Options.allow)
    acceptNone = try parsed.value(Options.accept) == "none"
    let servers = try parsed.value(Options.federate)
    let site = try parsed.value(Options.site)
    switch (servers, site) {
    case (nil, nil):
      for option in [
        Options.natsCredentials.spec, Options.natsTrustedCertificates.spec, Options.queueMaximumAge.spec, Options.queueMaximumBytes.spec,
      ]
      where parsed.isGiven(option) {
        throw .usage("--\(option.name) needs --federate (and --site)", path: parsed.path)
      }
      federation = nil
    case (nil, _?): throw .usage("--site needs --federate URL,...: the NATS cluster the sites share", path: parsed.path)
    case (_?, nil): throw .usage("--federate needs --site NAME: what the other sites call this one", path: parsed.path)
    case (let servers?, let site?):
      var nats = NATSSettings(servers: servers, name: "nearby-relay \(site) \(setup.name.value)")
      // The operator lists the nearest server first.
      nats.keepsServerOrder = true
      nats.credentialsFile = try parsed.value(Options.natsCredentials)
      nats.trustedCertificatesFile = try parsed.value(Options.natsTrustedCertificates)
      var configuration = FederationConfiguration(nats: nats, site: site)
      configuration.queueMaximumAge = try parsed.value(Options.queueMaximumAge, default: configuration.queueMaximumAge)
      configuration.queueMaximumBytes = try parsed.value(Options.queueMaximumBytes, default: configuration.queueMaximumBytes)
      configuration.presenceTTL = try parsed.value(Options.presenceTTL, default: configuration.presenceTTL)
      configuration.replicas = try parsed.value(Options.natsReplicas, default: configuration.replicas)
      federation = configuration
    }
  }

  func run(signals: AsyncStream<Int32>?) async -> Int32 {
    var allowList: Set<PeerID> = []
    if let allowFile {
      do {
        allowList = try RelayService.readAllowList(allowFile)
      } catch {
        return failure("\(error)")
      }
    }
    if let federation, let problem = Self.problem(with: federation.nats) { return failure(problem) }
    guard
      let (identity, session) = setup.makeSession({ configuration in
        configuration.isRelay = true
        configuration.acceptPolicy = allowFile != nil || acceptNone ? .none : .all
        configuration.allowList = allowList
        configuration.maximumPeers = maximumPeers
        if let busyPoll { configuration.busyPoll = busyPoll }
        configuration.connectFound = connectFound
        // A relay serves many peers: allow more handshakes at once than a chat does.
        configuration.maximumPendingConnections = 256
        // Still, no one host may hold more than an eighth of them.
        configuration.maximumPendingConnectionsPerSource = 32
        configuration.federate(federation)
      })
    else { return 1 }
    defer { withExtendedLifetime(identity) {} }
    let relay = RelayService(
      session: session, level: level, statsInterval: statsInterval, allowFile: allowFile, connect: connect, federation: federation)
    return await relay.run(signals: signals)
  }

  /// What makes NATS settings unusable, checked before anything starts (libnats would refuse
  /// them at once, and a relay that cannot federate should not run as if it did): a
  /// credentials or CA file that cannot be read or parsed, a bad server URL.
  static func problem(with nats: NATSSettings) -> String? {
    let files = [
      ("--nats-tls-ca", nats.trustedCertificatesFile, "the PEM file of the CA that signs the NATS servers' certificates"),
      ("--nats-creds", nats.credentialsFile, "the .creds file of a NATS user (its JWT and seed)"),
    ]
    for case (let option, let path?, let what) in files {
      let fd = open(path, O_RDONLY | O_CLOEXEC)
      guard fd >= 0 else { return "\(option) \(path): \(String(cString: strerror(errno))); give \(what)" }
      close(fd)
    }
    do {
      try NATSConnection.check(nats)
    } catch {
      return "the NATS settings cannot work: \(error) (check --federate, --nats-tls-ca and --nats-creds)"
    }
    return nil
  }
}
