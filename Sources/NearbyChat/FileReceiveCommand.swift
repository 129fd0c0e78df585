import Nearby
import NearbySystem

#if canImport(Glibc)
  import Glibc
#endif

/// `nearby receive`: waits for one offer (from one peer, with `from`), receives it and prints
/// where each file was saved. Invitations are accepted (only `from`'s, with `from`); an offer
/// is accepted at once with `acceptFiles == .all` (from anyone an invitation would be taken
/// from, also through a relay), else after a `y` on stdin. A transfer this state directory had begun resumes by itself
/// when its sender offers it again.
public actor FileReceiveCommand {
  public struct Options: Sendable {
    public var from: String?
    public var downloads: String
    public var acceptFiles: FileAcceptPolicy
    public var timeout: Duration?
    public var json: Bool
    /// Names, folders or patterns of the files to take (empty: all of them).
    public var only: [String]
    public init(from: String?, downloads: String, acceptFiles: FileAcceptPolicy, timeout: Duration?, json: Bool, only: [String] = []) {
      self.from = from
      self.downloads = downloads
      self.acceptFiles = acceptFiles
      self.timeout = timeout
      self.json = json
      self.only = only
    }
  }

  let session: NearbySession
  let options: Options
  let formatter: EventFormatter
  let errors = OutputWriter.standardError
  let output = OutputWriter.standardOutput
  /// The transfer this command is about.
  private var taken: TransferID?
  private var exitCode: Int32?
  private var lastProgress: ContinuousClock.Instant?
  private var answers: AsyncStream<String>?

  public init(session: NearbySession, options: Options) {
    self.session = session
    self.options = options
    formatter = EventFormatter(json: options.json)
  }

  /// - Returns: 0 once every file is saved, 1 on a failure, a refusal or the timeout, 128 +
  ///   a signal (the transfer is left to resume).
  public func run(signals: AsyncStream<Int32>?) async -> Int32 {
    let session = self.session
    var services: [ServiceGroup.Service] = [.init("events") { for await event in session.events { await self.handle(event) } }]
    if let timeout = options.timeout {
      services.append(
        .init("timeout") {
          try await Task.sleep(for: timeout)
          await self.timedOut(timeout)
        })
    }
    do {
      try await ServiceGroup(
        main: .init("session") { try await session.run() }, alongside: services, signals: signals,
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
    if let message { errors.line(message) }
    await session.shutdown()
  }

  private func timedOut(_ timeout: Duration) async {
    guard taken == nil else { return }
    await finish(1, "Error: no offer of files came within \(timeout)")
  }

  private func interrupted(_ signal: Int32) async {
    if let taken, exitCode == nil {
      errors.line("nearby receive: interrupted; run it again with the same state directory to resume transfer \(taken.shortHex)")
    }
    await finish(128 + signal)
  }

  private func wanted(_ peer: Peer) -> Bool {
    guard let from = options.from else { return true }
    if case .peer = PeerResolver.resolve(from, among: [peer]) { return true }
    return false
  }

  private func handle(_ event: SessionEvent) async {
    guard exitCode == nil else { return }
    switch event {
    case .status(.listening(let port)):
      let me = session.configuration.peer
      if options.json {
        output.line(
          JSONValue.object([
            ("event", .string("ready")), ("id", .string(me.id.hex)), ("name", .string(me.name.value)), ("port", .number(Int64(port))),
          ]).encoded)
      } else {
        errors.line("* waiting for files as \(EventFormatter.label(me)) on port \(port); saving into \(EventFormatter.sanitize(options.downloads))")
      }
    case .invitation(let invitation):
      if wanted(invitation.peer) {
        await session.accept(invitation.peer.id)
      } else {
        await session.decline(invitation.peer.id)
      }
    case .transfer(let news):
      await handle(news)
    default:
      break
    }
  }

  private func handle(_ news: TransferEvent) async {
    switch news {
    case .offer(let offer):
      guard taken == nil, wanted(offer.from) else {
        await offer.refuse()
        return
      }
      if options.json { output.line(formatter.format(.transfer(news)) ?? "") }
      var chosen: [Int]?
      if !options.only.isEmpty {
        switch LineChat.choose(options.only, in: offer.files, instead: "give other --only values, or none for every file") {
        case .success(let indices): chosen = indices
        case .failure(let problem):
          await offer.refuse()
          await finish(1, "Error: refused the offer of \(EventFormatter.label(offer.from)): \(problem.text)")
          return
        }
      }
      if options.acceptFiles == .none {
        await offer.refuse()
        await finish(1, "Error: refused the offer of \(EventFormatter.label(offer.from)) (--accept-files none)")
        return
      }
      // This command takes every invitation (only --from's with --from): by the same rule,
      // "all" takes the offer of anyone it would have taken an invitation from.
      if options.acceptFiles != .all {
        let taking = chosen.map { "; taking \($0.count) of them (--only)" } ?? ""
        errors.write("* \(EventFormatter.label(offer.from)) offers \(EventFormatter.offerSummary(offer.files))\(taking); accept? [y/N] ")
        guard await answer() else {
          await offer.refuse()
          await finish(1, "Error: refused the offer of \(EventFormatter.label(offer.from))")
          return
        }
      }
      taken = offer.id
      do {
        if let chosen {
          try await offer.accept(only: chosen, into: options.downloads)
        } else {
          try await offer.accept(into: options.downloads)
        }
      } catch {
        await finish(1, "Error: \(error)")
      }
    case .started(let progress):
      // A transfer of an earlier run, resumed without asking.
      if taken == nil, wanted(progress.peer), progress.direction == .receive { taken = progress.id }
      report(news, progress)
    case .progress(let progress):
      report(news, progress)
    case .finished(let id, let peer, _, let end, let files) where id == taken:
      if options.json { output.line(formatter.format(.transfer(news)) ?? "") }
      switch end {
      case .completed:
        if !options.json { for file in files { output.line(EventFormatter.sanitize(file.path)) } }
        await finish(0)
      case .cancelled(let byPeer, let message):
        await finish(
          1,
          "Error: \(EventFormatter.cancelledText(id, by: byPeer ? peer : nil, message: message))")
      case .failed(_, let message):
        await finish(1, "Error: the transfer from \(EventFormatter.label(peer)) failed: \(EventFormatter.sanitize(message))")
      }
    default:
      break
    }
  }

  private func report(_ news: TransferEvent, _ progress: TransferProgress) {
    guard progress.id == taken else { return }
    if options.json {
      output.line(formatter.format(.transfer(news)) ?? "")
    } else if lastProgress.map({ ContinuousClock.now - $0 >= .seconds(1) }) ?? true {
      lastProgress = .now
      errors.line("* receiving from \(EventFormatter.label(progress.peer)): \(EventFormatter.progressText(progress))")
    }
  }

  /// A line from stdin: whether it says yes.
  private func answer() async -> Bool {
    if answers == nil { answers = LineReader.lines() }
    guard let answers else { return false }
    for await line in answers { return ["y", "yes"].contains(line.trimmed.lowercased()) }
    return false
  }
}
