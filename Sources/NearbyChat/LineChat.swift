import Nearby

/// The options of `nearby chat`, validated.
public struct ChatOptions: Sendable {
  public var configuration: SessionConfiguration
  public var json = false
  public var plain = false
  public var color = true
  public var connect: [Endpoint] = []
  public var stateDirectory: String
  public var script: String?

  public init(configuration: SessionConfiguration, stateDirectory: String) {
    self.configuration = configuration
    self.stateDirectory = stateDirectory
  }
}

/// `nearby chat` in line mode: every input line is a command or a message, every event one
/// output line (text or JSON). It is the thin shell around a ``NearbySession`` that scripts
/// and tests drive through pipes.
public actor LineChat {
  let session: NearbySession
  let output: OutputWriter
  let formatter: EventFormatter
  let connect: [Endpoint]
  /// Messages sent and not yet delivered or failed, per peer.
  private var outstanding: [UInt64: Set<PeerID>] = [:]
  private var drainWaiter: CheckedContinuation<Void, Never>?
  private var quitting = false

  public init(session: NearbySession, output: OutputWriter = .standardOutput, json: Bool, connect: [Endpoint] = []) {
    self.session = session
    self.output = output
    self.formatter = EventFormatter(json: json)
    self.connect = connect
  }

  /// Runs the chat until /quit, end of input (after pending messages settle) or a signal.
  /// - Returns: the process exit code.
  public func run(input: AsyncStream<String>, signals: AsyncStream<Int32>?) async -> Int32 {
    let session = self.session
    var failure: (any Error)?
    await withTaskGroup(of: Void.self) { group in
      group.addTask {
        for await event in session.events { await self.handle(event) }
      }
      group.addTask {
        for await line in input {
          if await self.handle(line: line) { return }
        }
        await self.endOfInput()
      }
      if let signals {
        group.addTask {
          for await signal in signals where signal == SIGINT || signal == SIGTERM {
            await self.quit()
          }
        }
      }
      do {
        try await session.run()
      } catch {
        failure = error
      }
      group.cancelAll()
    }
    if let failure {
      OutputWriter.standardError.line("nearby chat: \(failure)")
      return 1
    }
    return 0
  }

  // MARK: Events

  func handle(_ event: SessionEvent) async {
    switch event {
    case .status(.listening(let port)):
      let peer = session.configuration.peer
      let service = session.configuration.serviceType
      if formatter.json {
        output.line(
          JSONValue.object([
            ("event", .string("ready")), ("id", .string(peer.id.hex)), ("name", .string(peer.name.value)), ("port", .number(Int64(port))),
            ("service", .string(service.type)),
          ]).encoded)
      } else {
        output.line("* ready: \(EventFormatter.label(peer)) listening on port \(port), service \(service.type) — /help for commands")
      }
      for endpoint in connect { await session.invite(endpoints: [endpoint]) }
    case .delivered(let id, let peer):
      settle(id, peer.id)
    case .error(.undelivered(let id, _, let peerID, _)):
      settle(id, peerID)
    case .disconnected(let peer, _):
      for id in outstanding.keys { settle(id, peer.id) }
    default:
      break
    }
    if let line = formatter.format(event) { output.line(line) }
  }

  private func settle(_ id: UInt64, _ peer: PeerID) {
    guard outstanding[id] != nil else { return }
    outstanding[id]!.remove(peer)
    if outstanding[id]!.isEmpty { outstanding[id] = nil }
    if outstanding.isEmpty, let waiter = drainWaiter {
      drainWaiter = nil
      waiter.resume()
    }
  }

  // MARK: Input

  /// Handles one input line. - Returns: whether the chat is quitting.
  func handle(line: String) async -> Bool {
    let command = ChatCommand.parse(line)
    switch command {
    case .empty: break
    case .quit:
      await quit()
      return true
    case .help:
      for row in ChatCommand.helpText.split(separator: "\n") { note(String(row)) }
    case .invalid(let hint): note(hint, isError: true)
    case .peers:
      let found = await session.discoveredPeers
      if formatter.json {
        output.line(
          JSONValue.object([("event", .string("peers")), ("peers", .array(found.map { EventFormatter.discoveredJSON("found", $0) }))]).encoded)
      } else if found.isEmpty {
        note("no peers found yet")
      } else {
        for peer in found { output.line(EventFormatter.discoveredText("peer", peer)) }
      }
    case .who:
      let connected = await session.connectedPeers
      if formatter.json {
        output.line(JSONValue.object([("event", .string("who")), ("peers", .array(connected.map(EventFormatter.peerJSON)))]).encoded)
      } else {
        note(connected.isEmpty ? "nobody is connected" : "connected: " + connected.map(EventFormatter.label).joined(separator: ", "))
      }
    case .invitations:
      let pending = await session.pendingInvitations
      if formatter.json {
        output.line(
          JSONValue.object([("event", .string("invitations")), ("peers", .array(pending.map { EventFormatter.peerJSON($0.peer) }))]).encoded)
      } else {
        note(
          pending.isEmpty
            ? "no invitation is waiting" : "waiting for your answer: " + pending.map { EventFormatter.label($0.peer) }.joined(separator: ", "))
      }
    case .invite(let target, let context):
      guard let peer = await resolve(target, among: await candidates(connectedFirst: false), what: "peer") else { break }
      await session.invite(peer.id, context: Array(context.utf8))
    case .accept(let target):
      guard let peer = await resolve(target, among: await session.pendingInvitations.map(\.peer), what: "pending invitation") else { break }
      await session.accept(peer.id)
    case .decline(let target):
      guard let peer = await resolve(target, among: await session.pendingInvitations.map(\.peer), what: "pending invitation") else { break }
      await session.decline(peer.id)
    case .leave(let target):
      guard let peer = await resolve(target, among: await session.connectedPeers, what: "connected peer") else { break }
      await session.leave(peer.id)
    case .message(let target, let text):
      guard let peer = await resolve(target, among: await candidates(connectedFirst: true), what: "peer") else { break }
      await send(text, to: .peers([peer.id]))
    case .say(let text):
      await send(text, to: .all)
    }
    return false
  }

  private func candidates(connectedFirst: Bool) async -> [Peer] {
    let connected = await session.connectedPeers
    let found = await session.discoveredPeers.map(\.peer)
    return connectedFirst ? connected + found : found + connected
  }

  private func resolve(_ query: String, among peers: [Peer], what: String) async -> Peer? {
    let resolution = PeerResolver.resolve(query, among: peers)
    if case .peer(let peer) = resolution { return peer }
    note(PeerResolver.hint(for: query, resolution, what: what), isError: true)
    return nil
  }

  private func send(_ text: String, to recipients: Recipients) async {
    let (id, peers) = await session.sendTracked(Array(text.utf8), to: recipients)
    guard !peers.isEmpty else { return }
    outstanding[id] = Set(peers.map(\.id))
    if formatter.json {
      output.line(JSONValue.object([("event", .string("sent")), ("id", .unsigned(id)), ("to", .array(peers.map(EventFormatter.peerJSON)))]).encoded)
    } else {
      output.line("* sent #\(id) to \(peers.map(EventFormatter.label).joined(separator: ", "))")
    }
  }

  /// A line for the person (or an error object in JSON mode).
  private func note(_ text: String, isError: Bool = false) {
    if formatter.json {
      output.line(JSONValue.object([("event", .string(isError ? "error" : "notice")), ("message", .string(text))]).encoded)
    } else {
      output.line((isError ? "! " : "* ") + text)
    }
  }

  // MARK: Ending

  /// End of input: wait (at most 10 s) until every sent message is delivered or failed, then quit.
  func endOfInput() async {
    if !outstanding.isEmpty {
      await withTaskGroup(of: Void.self) { group in
        group.addTask { await self.waitForDrain() }
        group.addTask { try? await Task.sleep(for: .seconds(10)) }
        await group.next()
        group.cancelAll()
        self.releaseDrainWaiter()
      }
    }
    await quit()
  }

  private func waitForDrain() async {
    if outstanding.isEmpty { return }
    await withCheckedContinuation { drainWaiter = $0 }
  }

  private func releaseDrainWaiter() {
    drainWaiter?.resume()
    drainWaiter = nil
  }

  func quit() async {
    guard !quitting else { return }
    quitting = true
    await session.shutdown()
  }
}

#if canImport(Glibc)
  import Glibc
#endif
