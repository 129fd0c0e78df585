import Nearby
import NearbySystem

#if canImport(Glibc)
  import Glibc
#endif

/// `nearby send`: finds a peer (or dials an address), invites it, offers files and waits until
/// the peer has verified every one. A lost session is invited again (every second, up to the
/// timeout) and the transfer resumes where it stopped.
///
/// Output: progress and news on stderr (at most one progress line a second); on success one
/// line per file on stdout, `BLAKE2B  NAME` as `b2sum -l 256` prints it. With `json`, JSON
/// events on stdout instead (`offer`-side `transfer`, `transfer-done`, ...).
public actor FileSendCommand {
  public struct Options: Sendable {
    public var target: String
    public var paths: [String]
    public var connect: [Endpoint]
    public var timeout: Duration
    public var json: Bool
    public init(target: String, paths: [String], connect: [Endpoint], timeout: Duration, json: Bool) {
      self.target = target
      self.paths = paths
      self.connect = connect
      self.timeout = timeout
      self.json = json
    }
  }

  let session: NearbySession
  let options: Options
  let formatter: EventFormatter
  let errors = OutputWriter.standardError
  let output = OutputWriter.standardOutput
  private var peer: Peer?
  private var discovered: DiscoveredPeer?
  private var transfer: OutgoingTransfer?
  private var connected = false
  private var inviting = false
  private var invitedAt = ContinuousClock.now
  private var relaysInvited: Set<PeerID> = []
  private var unreachableSince = ContinuousClock.now
  private var exitCode: Int32?
  private var lastProgress: ContinuousClock.Instant?

  public init(session: NearbySession, options: Options) {
    self.session = session
    self.options = options
    formatter = EventFormatter(json: options.json)
  }

  /// - Returns: 0 when every file was verified by the peer, 1 otherwise, 128 + a signal.
  public func run(signals: AsyncStream<Int32>?) async -> Int32 {
    let session = self.session
    do {
      try await ServiceGroup(
        main: .init("session") { try await session.run() },
        alongside: [
          .init("events") { for await event in session.events { await self.handle(event) } },
          .init("retry") { try await self.retryLoop() },
        ],
        signals: signals,
        onSignal: { signal in
          await self.interrupted(signal)
          return false
        }
      ).run()
    } catch {
      errors.line("Error: \(error)")
      return 1
    }
    return exitCode ?? 1
  }

  private func finish(_ code: Int32, _ message: String? = nil) async {
    guard exitCode == nil else { return }
    exitCode = code
    if let message { (code == 0 ? output : errors).line(message) }
    await session.shutdown()
  }

  private func interrupted(_ signal: Int32) async {
    if let transfer, exitCode == nil {
      errors.line("nearby send: interrupted; cancelling transfer \(transfer.id.shortHex)")
      await transfer.cancel()
      try? await Task.sleep(for: .milliseconds(200))
    }
    await finish(128 + signal)
  }

  private func matches(_ candidate: Peer) -> Bool {
    if let peer { return peer.id == candidate.id }
    if case .peer = PeerResolver.resolve(options.target, among: [candidate]) { return true }
    return false
  }

  private func handle(_ event: SessionEvent) async {
    guard exitCode == nil else { return }
    switch event {
    case .status(.listening):
      unreachableSince = .now
      await invite()
    case .found(let found), .updated(let found):
      guard matches(found.peer) else { return }
      discovered = found
      if !connected { await invite() }
    case .invitation(let invitation):
      // A relay (`--connect-found`) invites whoever it finds: through it, peers on other
      // segments can be reached. Anyone else is declined.
      let relays = await session.discoveredPeers.filter(\.isRelay).map(\.peer.id)
      if relays.contains(invitation.peer.id) {
        await session.accept(invitation.peer.id)
      } else {
        await session.decline(invitation.peer.id)
      }
    case .reachable(let relayedPeer, let relay) where matches(relayedPeer):
      guard !connected else { return }
      if !options.json { errors.line("* \(EventFormatter.label(relayedPeer)) can be reached through \(EventFormatter.label(relay))") }
      await start(relayedPeer)
    case .unreachable(let gone) where peer?.id == gone.id:
      connected = false
      unreachableSince = .now
    case .connected(let connectedPeer, _):
      guard matches(connectedPeer) else {
        // Dialled by address and reached somebody else.
        if !options.connect.isEmpty, peer == nil {
          await finish(1, "Error: \(options.connect[0]) is \(EventFormatter.label(connectedPeer)), not '\(options.target)'")
        }
        return
      }
      inviting = false
      await start(connectedPeer)
    case .disconnected(let gone, _) where relaysInvited.contains(gone.id):
      relaysInvited.remove(gone.id)
    case .disconnected(let gone, let reason) where peer?.id == gone.id:
      connected = false
      inviting = false
      unreachableSince = .now
      if !options.json { errors.line("* lost \(EventFormatter.label(gone)) (\(EventFormatter.sanitize(reason.description))); trying again") }
    case .declined(let declining, let reason) where matches(declining):
      inviting = false
      await finish(1, "Error: \(EventFormatter.label(declining)) declined the invitation (\(EventFormatter.sanitize(reason.description)))")
    case .error(.connectFailed(let failed, let detail)) where failed.map(matches) ?? true:
      inviting = false
      if !options.json { errors.line("* could not connect: \(EventFormatter.sanitize(detail)); trying again") }
    case .transfer(let news):
      await handle(news)
    case .error(let error) where options.json:
      output.line(formatter.format(.error(error)) ?? "")
    default:
      break
    }
  }

  private func handle(_ news: TransferEvent) async {
    guard let transfer else { return }
    switch news {
    case .started(let progress), .progress(let progress):
      guard progress.id == transfer.id else { return }
      if options.json {
        output.line(formatter.format(.transfer(news)) ?? "")
      } else if lastProgress.map({ ContinuousClock.now - $0 >= .seconds(1) }) ?? true {
        lastProgress = .now
        errors.line("* sending to \(EventFormatter.label(progress.peer)): \(EventFormatter.progressText(progress))")
      }
    case .finished(let id, let peer, _, let end, let files) where id == transfer.id:
      if options.json { output.line(formatter.format(.transfer(news)) ?? "") }
      switch end {
      case .completed:
        if !options.json {
          for file in files { output.line("\(file.blake2b)  \(EventFormatter.sanitize(file.name))") }
          let total = EventFormatter.byteText(files.reduce(UInt64(0)) { $0 + $1.size })
          errors.line("* \(EventFormatter.label(peer)) verified and saved \(files.count == 1 ? "1 file" : "\(files.count) files") (\(total))")
        }
        await finish(0)
      case .cancelled(let byPeer, let message):
        await finish(
          1,
          "Error: \(EventFormatter.cancelledText(id, by: byPeer ? peer : nil, message: message))")
      case .failed(let reason, let message):
        let what = reason == .refused ? "\(EventFormatter.label(peer)) refused the files" : "the transfer failed"
        await finish(1, "Error: \(what): \(EventFormatter.sanitize(message))")
      }
    default:
      break
    }
  }

  /// The peer can be reached (directly or through a relay): offer the files (once; a later
  /// route resumes the same transfer by itself).
  private func start(_ reached: Peer) async {
    peer = reached
    connected = true
    guard transfer == nil else { return }
    do {
      let started = try await session.sendFiles(at: options.paths, to: reached.id)
      transfer = started
      if !options.json {
        errors.line("* offered \(EventFormatter.offerSummary(started.files)) to \(EventFormatter.label(reached)): transfer \(started.id.shortHex)")
        for skipped in started.skipped { errors.line("* left out (not a regular file or folder): \(EventFormatter.sanitize(skipped))") }
      }
    } catch {
      await finish(1, "Error: \(error)")
    }
  }

  /// Invites the peer: by address, or as found through DNS-SD.
  private func invite() async {
    guard !connected, !inviting, exitCode == nil else { return }
    if !options.connect.isEmpty {
      inviting = true
      invitedAt = .now
      await session.invite(endpoints: options.connect)
    } else if let discovered {
      inviting = true
      invitedAt = .now
      await session.invite(discovered)
    }
  }

  /// Every second: invite again while not connected; give up after the timeout.
  private func retryLoop() async throws {
    while true {
      try await Task.sleep(for: .seconds(1))
      guard exitCode == nil else { return }
      if connected { continue }
      if ContinuousClock.now - unreachableSince > options.timeout {
        let who = peer.map(EventFormatter.label) ?? "'\(options.target)'"
        let hint = options.connect.isEmpty ? "is it running, on this network, with the same --service?" : "is it listening there?"
        await finish(1, "Error: could not reach \(who) within \(options.timeout): \(hint)")
        return
      }
      // Not found directly after a moment: the relays found may reach it (their rosters say).
      if discovered == nil, options.connect.isEmpty, ContinuousClock.now - unreachableSince > .seconds(2) {
        let connectedPeers = await session.connectedPeers.map(\.id)
        for relay in await session.discoveredPeers
        where relay.isRelay && !connectedPeers.contains(relay.peer.id) && !relaysInvited.contains(relay.peer.id) {
          relaysInvited.insert(relay.peer.id)
          await session.invite(relay)
        }
      }
      // An attempt still in flight gets the connect timeout and a moment; then another.
      if inviting, ContinuousClock.now - invitedAt < .seconds(7) { continue }
      inviting = false
      await invite()
    }
  }
}
