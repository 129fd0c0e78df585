import Nearby
import NearbyTestSupport
import Testing

/// Messages the application has not taken are bounded per connection and for all
/// connections together: many peers cannot each fill their share.
@Suite("Untaken messages across connections")
struct UntakenBudgetTests {
  @Test func manyPeersCannotEachFillTheirShareAndEverythingArrivesOnceTaken() async throws {
    var configuration = SessionConfiguration(identity: .ephemeral(), name: try DisplayName("alice"))
    configuration.advertise = false
    configuration.browse = false
    configuration.listenHost = "127.0.0.1"
    configuration.acceptPolicy = .all
    configuration.maximumUntakenBytesInAll = 3 << 20
    let alice = try NearbySession(configuration: configuration)
    // One consumer that takes nothing until told.
    var events = alice.events.makeAsyncIterator()
    let run = Task { try await alice.run() }
    let port = try #require(await alice.waitUntilListening())
    let body = [UInt8](repeating: 0x61, count: 1 << 20)
    let perPeer = 8
    var senders: [RunningSession] = []
    var floods: [Task<Int, Never>] = []
    for name in ["bob", "carol", "dave"] {
      let sender = try await RunningSession.start(name)
      await sender.session.invite(endpoints: [Endpoint(host: "127.0.0.1", port: port)])
      _ = try await sender.expect("connected") { if case .connected = $0 { true } else { nil } }
      senders.append(sender)
      let session = sender.session
      let aliceID = alice.configuration.peer.id
      floods.append(
        Task {
          var sent = 0
          for _ in 0..<perPeer where (try? await session.send(body, to: .peers([aliceID]))) != nil { sent += 1 }
          return sent
        })
    }
    // Nothing below may hang: past this, alice shuts down, which ends her events (the
    // loop taking them stops short and fails) and the floods (their sends are refused).
    let watchdog = Task {
      try await Task.sleep(for: .seconds(90))
      await alice.shutdown()
    }
    // Until every connection is held up (or 20 s: a slow machine sends slowly).
    let deadline = ContinuousClock.now + .seconds(20)
    var figures = await alice.untakenFigures
    while figures.pausedConnections < 3, ContinuousClock.now < deadline {
      try await Task.sleep(for: .milliseconds(50))
      figures = await alice.untakenFigures
    }
    try await Task.sleep(for: .milliseconds(300))
    figures = await alice.untakenFigures
    // Each connection stops after the message that took the total over 3 MiB, and a turn
    // reads at most one more of them: 3 MiB and one message per connection at most, where
    // the per-connection limits alone allow 3 x 5 MiB.
    #expect(figures.bytes <= (3 << 20) + 3 * ((1 << 20) + 4096), "\(figures.bytes) bytes untaken")
    #expect(figures.pausedConnections == 3, "\(figures.pausedConnections) connections paused; the senders saw \(Self.trouble(senders))")
    // Taking them all: every message arrives (no connection stays paused) and is delivered.
    var received = 0
    while received < 3 * perPeer, let event = await events.next() {
      if case .message = event { received += 1 }
    }
    #expect(received == 3 * perPeer, "\(received) messages taken; the senders saw \(Self.trouble(senders))")
    for flood in floods { #expect(await flood.value == perPeer) }
    for sender in senders {
      for _ in 0..<perPeer { _ = try await sender.expect("delivered") { if case .delivered = $0 { true } else { nil } } }
      try await sender.stop()
    }
    watchdog.cancel()
    await alice.shutdown()
    try await run.value
  }

  /// What went wrong for the senders, as far as their events say: disconnections and errors.
  static func trouble(_ senders: [RunningSession]) -> String {
    let seen = senders.map { sender in
      let events = sender.events.all.filter {
        switch $0 {
        case .disconnected, .error: true
        default: false
        }
      }
      return "\(sender.peer.name): \(events.isEmpty ? "nothing" : events.map { "\($0)" }.joined(separator: "; "))"
    }
    return seen.joined(separator: " | ")
  }
}
