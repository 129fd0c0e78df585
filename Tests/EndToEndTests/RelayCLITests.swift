import CNearbySystem
import Foundation
import Nearby
import NearbyTestSupport
import Testing

private func named(_ name: String) -> @Sendable ([String: Any]) -> Bool {
  { ($0["peer"] as? [String: Any])?["name"] as? String == name || ($0["from"] as? [String: Any])?["name"] as? String == name }
}

/// The resident memory of a process, from /proc.
func residentKilobytes(_ pid: pid_t) -> Int {
  guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return -1 }
  let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") } ?? ""
  return Int(line.split(separator: " ").dropFirst().first ?? "") ?? -1
}

@Suite("Relay end to end (nearby relay, real Avahi)", .enabled(if: LAN.avahiAvailable, "needs scripts/lan loopback"))
struct RelayCLITests {
  static func relay(
    _ name: String, _ service: String, state: String = Repository.temporaryDirectory(), _ extra: [String] = [], lan: TestLAN? = nil,
    host: String? = nil
  )
    throws -> PeerProcess
  {
    try PeerProcess(
      name, ["relay", "--name", name, "--service", service, "--connect-found", "--stats-interval", "1", "--state-dir", state] + extra, in: lan,
      host: host)
  }

  static func chat(_ name: String, _ service: String, _ extra: [String] = [], lan: TestLAN? = nil, host: String? = nil) throws -> PeerProcess {
    try PeerProcess(
      name, ["chat", "--name", name, "--json", "--service", service, "--state-dir", Repository.temporaryDirectory()] + extra, in: lan, host: host)
  }

  @Test func aRelayOnTwoSegmentsJoinsPeersThatCannotSeeEachOther() async throws {
    let lan = try await TestLAN(["a,r", "r,c"])
    let service = LAN.uniqueServiceType().name
    let relay = try Self.relay("r", service, lan: lan, host: "r")
    let alice = try Self.chat("alice", service, ["--accept", "ask"], lan: lan, host: "a")
    let carol = try Self.chat("carol", service, ["--accept", "all"], lan: lan, host: "c")
    // Alice is asked by the relay (a person only has to accept it); carol accepts all.
    try await alice.expect("invitation", where: named("r"))
    alice.send("/accept r")
    try await alice.expect("connected", where: named("r"))
    try await carol.expect("connected", where: named("r"))
    try await alice.expect("reachable", where: named("carol"))
    try await carol.expect("reachable", where: named("alice"))

    alice.send("/msg carol hello from segment 1 👋")
    let sent = try await alice.expect("sent")
    let message = try await carol.expect("message", where: named("alice"))
    #expect(message["text"] as? String == "hello from segment 1 👋")
    #expect(message["private"] as? Bool == true)
    #expect(message["id"] as? Int == sent["id"] as? Int)
    try await alice.expect("delivered") { ($0["peer"] as? [String: Any])?["name"] as? String == "carol" && $0["id"] as? Int == sent["id"] as? Int }

    carol.send("hi everyone")
    let back = try await alice.expect("message", where: named("carol"))
    #expect(back["text"] as? String == "hi everyone")
    try await carol.expect("delivered", where: named("alice"))

    // They never saw each other in DNS-SD.
    #expect(!alice.unconsumed.contains { $0.contains("\"event\":\"found\"") && $0.contains("carol") })
    #expect(!carol.unconsumed.contains { $0.contains("\"event\":\"found\"") && $0.contains("alice") })
    alice.send("/peers")
    let relayed = try await alice.expect("relayed")
    #expect("\(relayed.value)".contains("carol"))

    // The relay logs key=value lines, with stats.
    try await relay.expectLine(containing: "event=stats")
    let connected = try await relay.expectLine(containing: "event=connected")
    #expect(connected.contains("level=info") && connected.contains("peer="))

    // A peer that leaves is dropped from the other's roster at once.
    carol.send("/quit")
    try await alice.expect("unreachable", within: .seconds(3), where: named("carol"))

    // SIGTERM: goodbye to everyone, exit 0 promptly.
    let stopping = ContinuousClock.now
    relay.child.terminate(SIGTERM)
    #expect(await relay.wait() == 0)
    #expect(ContinuousClock.now - stopping < .seconds(3))
    let gone = try await alice.expect("disconnected", where: named("r"))
    #expect(gone["reason"] as? String == "quit")
    await alice.stop()
    await carol.stop()
    await lan.down()
  }

  @Test func twoJoinedRelaysCarryMessagesOnceWithoutLoops() async throws {
    let lan = try await TestLAN(["a,r1", "r1,r2", "r2,c"])
    let service = LAN.uniqueServiceType().name
    let r1 = try Self.relay("r1", service, lan: lan, host: "r1")
    let r2 = try Self.relay("r2", service, lan: lan, host: "r2")
    let alice = try Self.chat("alice", service, ["--accept", "all"], lan: lan, host: "a")
    let carol = try Self.chat("carol", service, ["--accept", "all"], lan: lan, host: "c")
    try await alice.expect("reachable", within: .seconds(20), where: named("carol"))
    try await carol.expect("reachable", within: .seconds(20), where: named("alice"))
    for index in 0..<5 { alice.send("message \(index)") }
    for index in 0..<5 {
      let message = try await carol.expect("message", where: named("alice"))
      #expect(message["text"] as? String == "message \(index)")
      try await alice.expect("delivered", where: named("carol"))
    }
    try await Task.sleep(for: .seconds(1))
    #expect(!carol.unconsumed.contains { $0.contains("\"event\":\"message\"") }, "duplicates: \(carol.unconsumed)")
    #expect(!alice.unconsumed.contains { $0.contains("\"event\":\"delivered\"") })
    for process in [alice, carol, r1, r2] { await process.stop() }
    await lan.down()
  }

  @Test func peersReconnectByThemselvesWhenAKilledRelayComesBack() async throws {
    let service = LAN.uniqueServiceType().name
    let state = Repository.temporaryDirectory()
    var relay = try Self.relay("r", service, state: state)
    let alice = try Self.chat("alice", service, ["--accept", "all"])
    let carol = try Self.chat("carol", service, ["--accept", "all"])
    try await alice.expect("connected", where: named("r"))
    try await carol.expect("connected", where: named("r"))
    try await alice.expect("reachable", where: named("carol"))
    relay.child.terminate(SIGKILL)
    _ = await relay.wait()
    let killedAt = ContinuousClock.now
    // Their sessions with the relay wait to resume; the peers behind it stay addressable
    // meanwhile (messages to them wait for the relay).
    try await alice.expect("reconnecting", within: .seconds(5), where: named("r"))
    try await carol.expect("reconnecting", within: .seconds(5), where: named("r"))
    #expect(ContinuousClock.now - killedAt < .seconds(5))
    alice.send("/msg carol while the relay is away")
    let held = try await alice.expect("sent")
    #expect((held["to"] as? [[String: Any]])?.compactMap { $0["name"] as? String } == ["carol"], "\(held)")
    // The relay's new process does not know the old sessions: they end (only then is carol
    // unreachable, and the message that waited for the relay is reported), and new ones begin.
    relay = try Self.relay("r", service, state: state)
    try await alice.expect("disconnected", within: .seconds(20), where: named("r"))
    try await alice.expect("unreachable", where: named("carol"))
    let heldID = held["id"] as? NSNumber
    try await alice.expect("error") { ($0["id"] as? NSNumber) == heldID && (($0["peer"] as? [String: Any])?["name"] as? String) == "carol" }
    try await alice.expect("connected", within: .seconds(20), where: named("r"))
    try await carol.expect("connected", within: .seconds(20), where: named("r"))
    try await alice.expect("reachable", where: named("carol"))
    alice.send("/msg carol back again")
    let message = try await carol.expect("message", where: named("alice"))
    #expect(message["text"] as? String == "back again")
    for process in [alice, carol, relay] { await process.stop() }
  }

  @Test func twoHundredPeersThroughOneRelay() async throws {
    let service = LAN.uniqueServiceType().name
    let relay = try PeerProcess(
      "r",
      [
        "relay", "--name", "r", "--service", service, "--state-dir", Repository.temporaryDirectory(), "--stats-interval", "0", "--log-level",
        "warning",
      ])
    // The relay logs nothing at warning level until something goes wrong: find its port from /proc.
    var port: UInt16 = 0
    for _ in 0..<100 where port == 0 {
      try await Task.sleep(for: .milliseconds(50))
      port = listeningPort(of: relay.child.pid) ?? 0
    }
    #expect(port != 0)
    let count = 200
    var peers: [Session] = []
    for index in 0...count {
      var configuration = SessionConfiguration(identity: .ephemeral(), name: try DisplayName("p\(index)"))
      // 201 sessions in one test process, beside the rest of the suite: a loop of this
      // process starved for seconds must not count the relay as gone.
      configuration.timeouts.deadPeer = .seconds(30)
      configuration.advertise = false
      configuration.browse = false
      configuration.listenHost = "127.0.0.1"
      peers.append(try await Session.start(configuration))
    }
    print("relay-200: \(peers.count) sessions started")
    // In waves of 30: a relay refuses more than 32 connections being set up at once from one
    // host with ERROR busy, and on loopback every peer is the same host (each handshake costs
    // it a few hundred microseconds of key exchange and signatures).
    for wave in stride(from: 0, to: peers.count, by: 30) {
      let members = peers[wave..<min(wave + 30, peers.count)]
      for peer in members { await peer.session.invite(endpoints: [Endpoint(host: "127.0.0.1", port: port)]) }
      for peer in members {
        // Under a full parallel run the relay has closed a handshake that took too long; the
        // peer hears so (`connectFailed`) and, as an application would, invites again.
        var attempts = 1
        while true {
          let failure = try await peer.events.next(within: .seconds(60), "connected") { event -> String?? in
            switch event {
            case .connected: .some(nil)
            case .error(.connectFailed(nil, let detail)): .some(detail)
            default: nil
            }
          }
          guard let failure else { break }
          print("relay-200: attempt \(attempts) failed: \(failure)")
          #expect(attempts < 3, "three attempts failed, the last: \(failure)")
          if attempts >= 3 { break }
          attempts += 1
          await peer.session.invite(endpoints: [Endpoint(host: "127.0.0.1", port: port)])
        }
      }
    }
    print("relay-200: invited and connected")
    // Everyone learns the others through the roster.
    let sender = peers[0]
    var reachable = 0
    while reachable < count {
      _ = try await sender.events.next(within: .seconds(60), "reachable") { if case .reachable = $0 { true } else { nil } }
      reachable += 1
    }
    let started = ContinuousClock.now
    #expect(await sender.session.reachablePeers(for: .all).count == count)
    let id = try await sender.session.send(Array("to all 200".utf8), to: .all)
    for peer in peers.dropFirst() {
      let message = try await peer.events.next(within: .seconds(30), "message") { if case .message(let m) = $0 { m } else { nil } }
      #expect(message.id == id)
    }
    let arrived = ContinuousClock.now - started
    var delivered = 0
    while delivered < count {
      _ = try await sender.events.next(within: .seconds(30), "delivered") { if case .delivered(id, _) = $0 { true } else { nil } }
      delivered += 1
    }
    let confirmed = ContinuousClock.now - started
    let report = try #require(await sender.session.delivery(of: id))
    #expect(report.recipients == count && report.isDelivered)
    let memory = residentKilobytes(relay.child.pid)
    print("relay-200: message to all reached \(count) peers in \(arrived), all delivered in \(confirmed); relay RSS \(memory) KiB")
    for peer in peers { await peer.stop() }
    await relay.stop()
  }
}

/// A session running in the test process.
struct Session: Sendable {
  let session: NearbySession
  let events: Recorder<SessionEvent>
  let task: Task<Void, any Error>

  static func start(_ configuration: SessionConfiguration) async throws -> Session {
    let session = try NearbySession(configuration: configuration)
    let events = Recorder(session.events)
    let task = Task { try await session.run() }
    _ = await session.waitUntilListening()
    return Session(session: session, events: events, task: task)
  }

  func stop() async {
    await session.shutdown()
    _ = try? await task.value
  }
}

/// The TCP port a process listens on (from /proc/net/tcp and tcp6, by the process's socket inodes).
func listeningPort(of pid: pid_t) -> UInt16? {
  guard let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd") else { return nil }
  var inodes = Set<String>()
  for entry in entries {
    if let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/\(entry)"), target.hasPrefix("socket:[") {
      inodes.insert(String(target.dropFirst(8).dropLast()))
    }
  }
  for table in ["/proc/\(pid)/net/tcp6", "/proc/\(pid)/net/tcp"] {
    guard let text = try? String(contentsOfFile: table, encoding: .utf8) else { continue }
    for line in text.split(separator: "\n").dropFirst() {
      let fields = line.split(separator: " ")
      guard fields.count > 9, fields[3] == "0A", inodes.contains(String(fields[9])) else { continue }
      if let colon = fields[1].lastIndex(of: ":"), let port = UInt16(fields[1][fields[1].index(after: colon)...], radix: 16) { return port }
    }
  }
  return nil
}
