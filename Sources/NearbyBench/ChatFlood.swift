import Nearby
import NearbySystem
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// A real `nearby chat --plain` process flooded with 1 MiB messages by one peer (mallory)
/// while another (carol) says something: what the issue of hostile peers asks to measure,
/// for `nearby bench --only hostile` (30 s) and for the end-to-end tests (a few seconds).
/// The chat advertises and browses, so it needs avahi-daemon (run inside `scripts/lan
/// loopback`); mallory and carol are sessions of this process that invite it by address.
package struct ChatFlood: Sendable {
  /// Where the chat's standard output goes.
  package enum Output: String, Sendable {
    case devNull = "/dev/null"
    /// A pipe nobody reads during the flood (read afterwards).
    case unreadPipe = "a pipe nobody reads"
  }

  /// What happened.
  package struct Report: Sendable, CustomStringConvertible {
    package var output: Output
    package var seconds: Double
    /// The chat's resident memory before the flood and the most during it.
    package var rssBefore = 0
    package var rssPeak = 0
    /// mallory's 1 MiB messages: queued by `send`, delivered (as far as the chat reported
    /// when the flood stopped), failed.
    package var sent = 0
    package var delivered = 0
    package var failed = 0
    /// The indexes of the messages delivered when the flood stopped.
    package var deliveredIndexes: Set<Int> = []
    /// How long carol's message took to be delivered (nil: not within the flood and 30 s
    /// more), and whether that was before the pipe was read.
    package var carolLatency: Duration?
    package var carolDeliveredDuringFlood = false
    /// After the flood, with the pipe read: indexes of mallory's messages the chat showed,
    /// and whether carol's was shown.
    package var shownIndexes: Set<Int> = []
    package var carolShown = false

    package var rssGrowth: Int { rssPeak - rssBefore }
    /// Delivered (the chat said it took them) but not in its output.
    package var deliveredNotShown: Set<Int> { output == .unreadPipe ? deliveredIndexes.subtracting(shownIndexes) : [] }

    package var description: String {
      var text =
        "\(output.rawValue), \(seconds) s: RSS \(rssBefore >> 20) MiB -> peak \(rssPeak >> 20) MiB (+\(rssGrowth >> 20) MiB); mallory sent \(sent), delivered \(delivered), failed \(failed)"
      if let carolLatency {
        text += "; carol's message delivered after \(carolLatency)\(carolDeliveredDuringFlood ? " (during the flood)" : " (after it)")"
      } else {
        text += "; carol's message never delivered"
      }
      if output == .unreadPipe {
        text += "; once the pipe was read: carol's message shown \(carolShown), delivered but never shown: \(deliveredNotShown.count)"
      }
      return text
    }
  }

  package let executable: String
  package let output: Output
  /// The chat prints JSON events (`--json`) instead of lines for people (`--plain`).
  package let json: Bool
  package let seconds: Double
  /// When carol speaks, from the start of the flood.
  package let carolAfter: Double

  /// - Parameter json: only with `.devNull` (what a pipe showed is read as lines for people).
  package init(executable: String, output: Output, json: Bool = false, seconds: Double, carolAfter: Double = 2) {
    precondition(!json || output == .devNull, "JSON output is measured into /dev/null only")
    self.executable = executable
    self.output = output
    self.json = json
    self.seconds = seconds
    self.carolAfter = carolAfter
  }

  /// Runs the chat, the flood and carol; stops everything.
  package func run() async throws -> Report {
    let chat = try FloodedChatProcess(executable: executable, output: output, json: json)
    let mallory = try await LocalSession.start("mallory")
    let carol = try await LocalSession.start("carol")
    let result: Result<Report, any Error>
    do {
      result = .success(try await measure(chat, mallory, carol))
    } catch {
      result = .failure(error)
    }
    await chat.stop()
    await mallory.stop()
    await carol.stop()
    return try result.get()
  }

  private func measure(_ chat: FloodedChatProcess, _ mallory: LocalSession, _ carol: LocalSession) async throws -> Report {
    var report = Report(output: output, seconds: seconds)
    let chatID = try await Self.connect(mallory, to: chat.port)
    _ = try await Self.connect(carol, to: chat.port)
    try await Task.sleep(for: .milliseconds(500))
    report.rssBefore = chat.residentBytes
    let sampler = MemorySampler(pid: chat.pid)
    let tally = FloodTally()
    let watcher = Task { await tally.watch(mallory.session.events) }
    let flooder = Task(executorPreference: mallory.session.executor) { await tally.flood(mallory.session, to: chatID) }
    try await Task.sleep(for: .seconds(carolAfter))
    let carolEvents = carol.session.events.makeAsyncIterator()
    let carolStart = ContinuousClock.now
    let carolID = try await carol.session.send(Array("hello from carol".utf8), to: .peers([chatID]))
    let carolWait = Task { () -> ContinuousClock.Instant? in
      var events = carolEvents
      while let event = await events.next() {
        if case .delivered(carolID, _) = event { return ContinuousClock.now }
      }
      return nil
    }
    try await Task.sleep(for: .seconds(seconds - carolAfter))
    flooder.cancel()
    _ = await flooder.value
    report.rssPeak = await sampler.stop()
    (report.sent, report.delivered, report.failed, report.deliveredIndexes) = tally.snapshot
    watcher.cancel()
    if output == .devNull {
      report.carolLatency = await Self.value(of: carolWait, within: .seconds(5)).map { $0 - carolStart }
      report.carolDeliveredDuringFlood = report.carolLatency.map { $0 < .seconds(seconds - carolAfter) } ?? false
    } else {
      // The chat takes carol's message only if its output has room for it; once the pipe is
      // read, whatever it took is shown.
      let readingStart = ContinuousClock.now
      let reader = chat.readOutput()
      if let delivered = await Self.value(of: carolWait, within: .seconds(30)) {
        report.carolLatency = delivered - carolStart
        report.carolDeliveredDuringFlood = delivered < readingStart
      }
      // The output is in order: once carol's line is read, so is everything taken before it.
      let deadline = ContinuousClock.now + .seconds(30)
      while !reader.lines.contains(where: { $0.contains("hello from carol") }), ContinuousClock.now < deadline {
        try await Task.sleep(for: .milliseconds(20))
      }
      let lines = reader.lines
      report.shownIndexes = Set(lines.compactMap(Self.index(ofLine:)))
      report.carolShown = lines.contains { $0.contains("] carol (private): hello from carol") }
    }
    carolWait.cancel()
    return report
  }

  /// Waits for a task's value for at most `timeout` (the task is cancelled after).
  static func value<T: Sendable>(of task: Task<T?, Never>, within timeout: Duration) async -> T? {
    let timer = Task {
      try? await Task.sleep(for: timeout)
      task.cancel()
    }
    let value = await task.value
    timer.cancel()
    return value
  }

  /// Invites the chat at `port` until it answers (it may still be starting). - Returns: its id.
  static func connect(_ peer: LocalSession, to port: UInt16) async throws -> PeerID {
    var events = peer.session.events.makeAsyncIterator()
    let deadline = ContinuousClock.now + .seconds(20)
    // What ended the last attempt, for the error (a parallel test run once gave up here
    // after 20 s without saying why).
    var answers: [String] = []
    while ContinuousClock.now < deadline {
      await peer.session.invite(endpoints: [Endpoint(host: "127.0.0.1", port: port)])
      attempt: while let event = await events.next() {
        switch event {
        case .connected(let chat, _): return chat.id
        case .error, .declined, .disconnected:
          answers.append("\(event)")
          break attempt
        default: continue
        }
      }
      try await Task.sleep(for: .milliseconds(200))
    }
    throw BenchError(
      "the chat did not accept \(peer.peer.name) within 20 s; \(answers.count) attempts ended with, last: \(answers.suffix(3).joined(separator: "; "))"
    )
  }

  /// mallory's message number `index`: `#index ` and filler up to 1 MiB.
  static func body(_ index: Int, template: [UInt8]) -> [UInt8] {
    var body = template
    let prefix = Array("#\(index) ".utf8)
    body.replaceSubrange(0..<prefix.count, with: prefix)
    return body
  }

  /// The index of a line showing one of mallory's messages
  /// (`[12:00:00] mallory (private): #12 xxx`).
  package static func index(ofLine line: String) -> Int? {
    guard line.contains("] mallory"), let range = line.firstRange(of: ": #") else { return nil }
    return Int(line[range.upperBound...].prefix { $0.isNumber })
  }
}

/// mallory's side: sends as fast as `send` lets it, and counts what its events say.
final class FloodTally: Sendable {
  private struct State {
    var sent = 0
    var failed = 0
    var indexes: [MessageID: Int] = [:]
    var delivered: Set<Int> = []
  }
  private let state = Mutex(State())

  var snapshot: (sent: Int, delivered: Int, failed: Int, indexes: Set<Int>) {
    state.withLock { ($0.sent, $0.delivered.count, $0.failed, $0.delivered) }
  }

  func flood(_ session: NearbySession, to chat: PeerID) async {
    let template = [UInt8](repeating: UInt8(ascii: "x"), count: NearbySession.maximumMessageSize)
    var index = 0
    while !Task.isCancelled {
      let body = ChatFlood.body(index, template: template)
      guard let id = try? await session.send(body, to: .peers([chat])) else { break }
      state.withLock {
        $0.sent += 1
        $0.indexes[id] = index
      }
      index += 1
    }
  }

  func watch(_ events: SessionEvents) async {
    for await event in events {
      switch event {
      case .delivered(let id, _):
        state.withLock { state in if let index = state.indexes[id] { state.delivered.insert(index) } }
      case .error(.undelivered):
        state.withLock { $0.failed += 1 }
      default: break
      }
      if Task.isCancelled { break }
    }
  }
}

/// Samples a process's resident memory every 20 ms until stopped. - Returns: the peak.
final class MemorySampler: Sendable {
  private let task: Task<Int, Never>

  init(pid: pid_t) {
    task = Task.detached {
      var peak = 0
      while !Task.isCancelled {
        peak = max(peak, FloodedChatProcess.residentBytes(of: pid))
        try? await Task.sleep(for: .milliseconds(20))
      }
      return max(peak, FloodedChatProcess.residentBytes(of: pid))
    }
  }

  func stop() async -> Int {
    task.cancel()
    return await task.value
  }
}
