// Must compile: the code of the documentation (Nearby.docc) through `import Nearby` alone.
// scripts/check-library type-checks it against the modules the example package built.
import Nearby

func gettingStarted(trusted: Set<PeerID>) async throws {
  let identity = try PeerIdentity(directory: PeerIdentity.defaultDirectory(environment: [:]))
  var configuration = SessionConfiguration(identity: identity, name: try DisplayName("alice"))
  configuration.serviceType = try ServiceType("my-tool")
  configuration.discoveryInfo = try DiscoveryInfo([(key: "room", value: "kitchen")])
  configuration.acceptPolicy = .ask
  configuration.reconnectGrace = .seconds(60)
  configuration.resendWindowBytes = 8 << 20
  let session = try NearbySession(configuration: configuration)

  try await withThrowingTaskGroup(of: Void.self) { group in
    group.addTask { try await session.run() }
    for await event in session.events {
      switch event {
      case .status(.listening(let port)): print("listening on port \(port)")
      case .found(let discovered) where discovered.peer.name.value == "bob":
        await session.invite(discovered.peer.id, context: Array("lunch?".utf8), timeout: .seconds(20))
      case .found(let discovered): print("found \(discovered.peer) at \(discovered.hostName) \(discovered.endpoints)")
      case .lost(let peer): print("lost \(peer)")
      case .connecting(let peer): print("connecting to \(peer)")
      case .connected(let peer, _):
        let id = try await session.send(Array("hello".utf8), to: .peer(peer.id))
        group.addTask {
          if let report = await session.delivery(of: id), report.isDelivered { print("everyone has message \(id)") }
        }
      case .declined(let peer, let reason): print("\(peer) declined: \(reason) \(reason == .timeout)")
      case .reconnecting(let peer, let attempt): print("\(peer): connection lost, attempt \(attempt) (\(await session.reconnectingPeers))")
      case .reconnected(let peer): print("\(peer) is back, nothing lost")
      case .invitation(let invitation):
        _ = String(decoding: invitation.context, as: UTF8.self)
        if trusted.contains(invitation.peer.id) {
          await session.accept(invitation.peer.id)
        } else {
          await session.decline(invitation.peer.id)
        }
      case .message(let message):
        print("\(message.from.name): \(String(decoding: message.body, as: UTF8.self)) \(message.isPrivate) \(message.timestamp)")
      case .delivered(let id, let peer): print("\(peer) has \(id)")
      case .error(.undelivered(let id, _, _, let reason)): print("\(id): \(reason)")
      case .error(let error): print(error)
      default: break
      }
    }
    try await group.waitForAll()
  }
  print(await session.connectedPeers, await session.pendingInvitations, NearbySession.maximumMessageSize)
  await session.waitForDeliveries()
  await session.shutdown()
}

func browseWithoutASession() async throws {
  let browser = NearbyBrowser()
  try await withThrowingTaskGroup(of: Void.self) { group in
    group.addTask { try await browser.run() }
    for await event in browser.events {
      if case .found(let discovered) = event, discovered.peer.name.value == "bob" {
        print(discovered.peer, discovered.endpoints)
        break
      }
    }
    group.cancelAll()
    try await group.waitForAll()
  }
}

func lowerLatency(_ session: NearbySession) async {
  await withTaskExecutorPreference(session.executor) {
    for await event in session.events { print(event) }
  }
}
