import Nearby
import NearbySystem

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

/// What the chat shows: session events, and the chat's own answers to commands. A
/// ``ChatOutput`` decides how (plain text, JSON, or the terminal UI).
public enum ChatLine: Sendable {
  case ready(Peer, port: UInt16, service: ServiceType)
  case event(SessionEvent)
  /// Our own message, queued for these peers.
  case sent(id: MessageID, text: String, to: [Peer], isPrivate: Bool)
  /// Every recipient of one of our messages has answered (it was delivered, or failed).
  case settled(DeliveryReport)
  case peers([DiscoveredPeer])
  /// Connected peers, and which of them are verified.
  case who([Peer], verified: Set<PeerID>)
  /// Peers reached through a relay (after /peers and /who).
  case relayed([RelayedPeer])
  case invitations([Invitation])
  /// File transfers going on or waiting (/transfers).
  case transfers([TransferStatus])
  /// Text from the chat itself (help, a hint).
  case notice(String)
  /// A command that could not be carried out, and what to do.
  case error(String)
}

/// A peer reached through a relay.
public struct RelayedPeer: Hashable, Sendable {
  public let peer: Peer
  public let via: Peer
  /// Where it is, when the relay federates sites (``NearbySession/site(of:)``).
  public let site: PeerSite?
  /// Its key is verified in the known-peers file (its code was compared in a direct session
  /// once; an id owns its key, so a relay cannot pass another key off as this peer's).
  public let isVerified: Bool
  public init(peer: Peer, via: Peer, site: PeerSite? = nil, isVerified: Bool = false) {
    self.peer = peer
    self.via = via
    self.site = site
    self.isVerified = isVerified
  }
}

/// Where chat lines go.
public protocol ChatOutput: Sendable {
  func show(_ line: ChatLine)
  /// Returns once the output can take more lines: the chat asks before it takes the next
  /// event from the session (or handles the next input line), so an output that cannot keep
  /// up (a pipe nobody reads) holds up taking messages — they stay with the session, which
  /// stops reading their senders — instead of piling up in memory. The default returns at once.
  func waitForRoom() async
}

extension ChatOutput {
  public func waitForRoom() async {}
}

/// The chat behind every front end: every input line is a command or a message, and every
/// event and answer goes to a ``ChatOutput``. It is the thin shell around a
/// ``NearbySession`` that people (through the terminal UI) and scripts (through pipes) drive.
/// What became of the messages it sent comes from the session (``NearbySession/delivery(of:)``),
/// and is shown as ``ChatLine/settled(_:)``.
public actor LineChat {
  let session: NearbySession
  let output: any ChatOutput
  let connect: [Endpoint]
  private var quitting = false
  /// Messages whose settlement the front end wants to see (``ChatLine/settled(_:)``).
  private let sentMessages: AsyncStream<MessageID>.Continuation
  private let sentStream: AsyncStream<MessageID>

  /// The longest input line the chat takes: a message of the largest body with room for a
  /// command before it. A longer one is refused whole (``ChatInput/tooLong(byteCount:limit:)``).
  public static let maximumLineBytes = NearbySession.maximumMessageSize + 4096

  public init(session: NearbySession, output: any ChatOutput, connect: [Endpoint] = []) {
    self.session = session
    self.output = output
    self.connect = connect
    (sentStream, sentMessages) = AsyncStream.makeStream(of: MessageID.self)
  }

  /// Runs the chat until /quit, end of input (after pending messages settle) or a signal.
  /// - Returns: the process exit code.
  public func run<Input: AsyncSequence & Sendable>(input: Input, signals: AsyncStream<Int32>?) async -> Int32
  where Input.Element == ChatInput, Input.Failure == Never {
    do {
      try await runSession(input: input, signals: signals)
      return 0
    } catch {
      OutputWriter.standardError.line("nearby chat: \(error)")
      return 1
    }
  }

  /// Like ``run(input:signals:)``, but throws the session's failure instead of printing it
  /// (the terminal chat prints it once the terminal is back to normal).
  /// - Parameters:
  ///   - services: more tasks for the same group (a front end's own), cancelled when the
  ///     session ends.
  ///   - onSignal: replaces the default handling (SIGINT and SIGTERM quit the chat);
  ///   returning `true` ends everything at once.
  public func runSession<Input: AsyncSequence & Sendable>(
    input: Input, signals: AsyncStream<Int32>?, alongside services: [ServiceGroup.Service] = [],
    onSignal: (@Sendable (Int32) async -> Bool)? = nil
  ) async throws where Input.Element == ChatInput, Input.Failure == Never {
    let session = self.session
    let sent = sentStream
    let output = self.output
    try await ServiceGroup(
      main: .init("session") { try await session.run() },
      alongside: [
        .init("events") {
          // Room first, then the next event: a message is taken (and acknowledged) only
          // when the output can show it.
          var events = session.events.makeAsyncIterator()
          while true {
            await output.waitForRoom()
            guard let event = await events.next() else { break }
            await self.handle(event)
          }
        },
        .init("input") {
          for await item in input {
            await output.waitForRoom()
            switch item {
            case .line(let line):
              if await self.handle(line: line) { return }
            case .tooLong(let byteCount, let limit):
              output.show(
                .error(
                  "a line of \(byteCount) bytes is longer than the chat takes (\(limit)): nothing was sent; send long text as a file (/send PEER PATH)"
                ))
            }
          }
          await self.endOfInput()
        },
        .init("deliveries") {
          // Each message's outcome, as soon as it is known (out of order when peers differ).
          // A discarding group: a plain task group keeps every finished child until it is
          // awaited, which cost a chat about 2 KiB per message for as long as it ran.
          await withDiscardingTaskGroup { group in
            for await id in sent {
              group.addTask {
                if let report = await session.delivery(of: id) { output.show(.settled(report)) }
              }
            }
          }
        },
      ] + services,
      signals: signals,
      onSignal: onSignal ?? { signal in
        if signal == SIGINT || signal == SIGTERM { await self.quit() }
        return false
      }
    ).run()
  }

  // MARK: Events

  func handle(_ event: SessionEvent) async {
    if case .status(.listening(let port)) = event {
      output.show(.ready(session.configuration.peer, port: port, service: session.configuration.serviceType))
      for endpoint in connect { await session.invite(endpoints: [endpoint]) }
    }
    output.show(.event(event))
  }

  // MARK: Input

  /// Handles one input line. - Returns: whether the chat is quitting.
  package func handle(line: String) async -> Bool {
    let command = ChatCommand.parse(line)
    switch command {
    case .empty: break
    case .quit:
      await quit()
      return true
    case .help:
      for row in ChatCommand.helpText.split(separator: "\n") { output.show(.notice(String(row))) }
    case .invalid(let hint): output.show(.error(hint))
    case .peers:
      output.show(.peers(await session.discoveredPeers))
      let relayed = await relayedPeers()
      if !relayed.isEmpty { output.show(.relayed(relayed)) }
    case .who:
      output.show(.who(await session.connectedPeers, verified: Set(session.knownPeers.filter(\.isVerified).map(\.id))))
      let reconnecting = await session.reconnectingPeers
      if !reconnecting.isEmpty {
        output.show(.notice("reconnecting (messages wait for them): " + reconnecting.map(EventFormatter.label).joined(separator: ", ")))
      }
      let relayed = await relayedPeers()
      if !relayed.isEmpty { output.show(.relayed(relayed)) }
    case .invitations: output.show(.invitations(await session.pendingInvitations))
    case .invite(let target, let context):
      guard let peer = await resolve(target, among: await candidates(connectedFirst: false), what: "peer") else { break }
      await session.invite(peer.id, context: Array(context.utf8))
    case .accept(let target):
      guard let peer = await resolve(target, among: await session.pendingInvitations.map(\.peer), what: "pending invitation") else { break }
      await session.accept(peer.id)
    case .decline(let target):
      guard let peer = await resolve(target, among: await session.pendingInvitations.map(\.peer), what: "pending invitation") else { break }
      await session.decline(peer.id)
    case .answerOnly(let accept):
      await answerOnlyInvitation(accept: accept)
    case .leave(let target):
      guard let peer = await resolve(target, among: await session.connectedPeers + session.reconnectingPeers, what: "connected peer") else { break }
      await session.leave(peer.id)
    case .verify(let target):
      guard let peer = await resolve(target, among: await session.connectedPeers, what: "connected peer") else { break }
      await session.requestVerification(of: peer.id)
    case .trust(let target):
      guard let peer = await resolve(target, among: await session.connectedPeers, what: "connected peer") else { break }
      do {
        try await session.trust(peer.id)
      } catch {
        output.show(.error(error.description))
      }
    case .message(let target, let text):
      guard let peer = await resolve(target, among: await candidates(connectedFirst: true), what: "peer") else { break }
      await send(text, to: .peers([peer.id]))
    case .say(let text):
      await send(text, to: .all)
    case .sendFiles, .receive, .refuse, .transfers, .cancelTransfer:
      await handleFileCommand(command)
    }
    return false
  }

  /// `/accept` or `/decline` without a name: the only pending invitation, named in a notice;
  /// with none or several waiting, a hint instead.
  private func answerOnlyInvitation(accept: Bool) async {
    let pending = await session.pendingInvitations
    let command = accept ? "/accept" : "/decline"
    guard pending.count == 1 else {
      if pending.isEmpty {
        output.show(.error("no invitation is waiting for your answer"))
      } else {
        let labels = pending.map { EventFormatter.label($0.peer) }.joined(separator: ", ")
        output.show(.error("\(pending.count) invitations are waiting (\(labels)): say which, \(command) NAME"))
      }
      return
    }
    let peer = pending[0].peer
    output.show(.notice("\(accept ? "accepting" : "declining") the invitation from \(EventFormatter.label(peer))"))
    if accept { await session.accept(peer.id) } else { await session.decline(peer.id) }
  }

  /// Peers reached through relays, with their sites when relays federate.
  private func relayedPeers() async -> [RelayedPeer] {
    var result: [RelayedPeer] = []
    let verified = Set(session.knownPeers.filter(\.isVerified).map(\.id))
    for (peer, via) in await session.relayedPeers {
      result.append(RelayedPeer(peer: peer, via: via, site: await session.site(of: peer.id), isVerified: verified.contains(peer.id)))
    }
    return result
  }

  func candidates(connectedFirst: Bool) async -> [Peer] {
    let connected = await session.connectedPeers + session.reconnectingPeers
    let found = await session.discoveredPeers.map(\.peer)
    let relayed = await session.relayedPeers.map(\.peer)
    return connectedFirst ? connected + relayed + found : found + connected + relayed
  }

  func resolve(_ query: String, among peers: [Peer], what: String) async -> Peer? {
    let resolution = PeerResolver.resolve(query, among: peers)
    if case .peer(let peer) = resolution { return peer }
    output.show(.error(PeerResolver.hint(for: query, resolution, what: what)))
    return nil
  }

  private func send(_ text: String, to recipients: Recipients) async {
    do {
      let (id, peers) = try await Self.send(Array(text.utf8), to: recipients, on: session)
      var isPrivate = false
      if case .peers = recipients { isPrivate = true }
      output.show(.sent(id: id, text: text, to: peers, isPrivate: isPrivate))
      sentMessages.yield(id)
    } catch {
      // Not a refused command: like a message that reaches nobody, it is an error event.
      output.show(.event(.error(.rejected(error.description))))
    }
  }

  /// Sends, and says whom the message went to as the session recorded it, in one stretch
  /// on the session's executor. Asking `reachablePeers(for:)` before the send raced with
  /// peers leaving: a soak saw a message shown as sent to a peer that had just quit, with no
  /// answer from it ever (the session had not sent it there). Asking `recipients(of:)` in a
  /// hop of its own after the send let the answers of a busy session be shown before "sent".
  private static func send(
    _ body: [UInt8], to recipients: Recipients, on session: isolated NearbySession
  ) async throws(SendError) -> (MessageID, [Peer]) {
    let id = try await session.send(body, to: recipients)
    return (id, session.recipients(of: id) ?? [])
  }

  // MARK: Ending

  /// End of input: wait (at most 10 s) until every sent message is delivered or failed, then quit.
  func endOfInput() async {
    let session = self.session
    await withTaskGroup(of: Void.self) { group in
      group.addTask { await session.waitForDeliveries() }
      group.addTask { try? await Task.sleep(for: .seconds(10)) }
      await group.next()
      group.cancelAll()
    }
    await quit()
  }

  package func quit() async {
    guard !quitting else { return }
    quitting = true
    sentMessages.finish()
    await session.shutdown()
  }
}

#if canImport(Glibc)
  import Glibc
#endif

/// One line of the chat's input, or the length of one too long to take.
public enum ChatInput: Sendable, Hashable {
  case line(String)
  case tooLong(byteCount: Int, limit: Int)

  /// A line read with ``LineReader/checkedLines(fd:maximumLineBytes:)``.
  public init(_ read: Result<String, LineReader.LineTooLong>) {
    switch read {
    case .success(let line): self = .line(line)
    case .failure(let tooLong): self = .tooLong(byteCount: tooLong.byteCount, limit: tooLong.limit)
    }
  }
}
