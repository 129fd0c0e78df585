import Foundation
import NearbySystem
import NearbyTestSupport
import Testing

private func named(_ name: String) -> @Sendable ([String: Any]) -> Bool {
  { ($0["peer"] as? [String: Any])?["name"] as? String == name || ($0["from"] as? [String: Any])?["name"] as? String == name }
}

private func text(_ wanted: String) -> @Sendable ([String: Any]) -> Bool { { $0["text"] as? String == wanted } }

/// A command other than `nearby` in a host of a ``TestLAN`` (a nats-server), its output in a
/// file.
private final class HostCommand: Sendable {
  let child: ChildProcess
  let log: String

  init(_ lan: TestLAN, _ host: String, _ command: [String]) throws {
    log = Repository.temporaryDirectory("nearby-host") + "/\(host).log"
    let fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
    guard fd >= 0 else { throw WaitError(description: "cannot create \(log)") }
    defer { close(fd) }
    child = try ChildProcess(
      Repository.lan, ["exec", lan.id, host, "--"] + command, standardInput: .null, standardOutput: .descriptor(fd), standardError: .descriptor(fd))
  }

  func stop() async {
    child.terminate(SIGTERM)
    let watchdog = Task {
      try await Task.sleep(for: .seconds(5))
      child.terminate(SIGKILL)
    }
    await child.wait()
    watchdog.cancel()
  }
}

/// Relays of three sites whose segments cannot reach each other, federated through a 3-node
/// NATS cluster on a backbone (`nearby relay --federate`), with real processes on a private
/// LAN: alice at site 1, carol at site 3 (later at site 2, on host carol2, with the same
/// identity).
@Suite(
  "Federation end to end (nearby relay --federate, nats-server on a backbone, real Avahi)", .serialized,
  .enabled(
    if: LAN.avahiAvailable && FileManager.default.isExecutableFile(atPath: "/usr/sbin/nats-server"), "needs scripts/lan loopback and nats-server")
)
struct FederationCLITests {
  static let segments = ["alice,r1", "carol2,r2", "carol,r3", "r1,r2,r3,n1,n2,n3"]

  /// The cluster's three nodes, started on the backbone.
  private static func natsCluster(_ lan: TestLAN) async throws -> (nodes: [HostCommand], urls: String) {
    var addresses: [String] = []
    for node in ["n1", "n2", "n3"] { addresses.append(try await lan.address(node)) }
    var nodes: [HostCommand] = []
    for (index, node) in ["n1", "n2", "n3"].enumerated() {
      let routes = addresses.enumerated().filter { $0.offset != index }.map { "nats://\($0.element):6222" }.joined(separator: ",")
      nodes.append(
        try HostCommand(
          lan, node,
          [
            "nats-server", "--jetstream", "--store_dir", Repository.temporaryDirectory("nearby-js"), "--server_name", node, "--addr",
            addresses[index], "--port", "4222", "--cluster_name", "nearby", "--cluster", "nats://\(addresses[index]):6222", "--routes", routes,
          ]))
    }
    return (nodes, addresses.map { "nats://\($0):4222" }.joined(separator: ","))
  }

  private static func relay(_ name: String, site: String, servers: String, state: String, service: String, lan: TestLAN) throws -> PeerProcess {
    try PeerProcess(
      name,
      [
        "relay", "--name", name, "--service", service, "--connect-found", "--site", site, "--federate", servers,
        "--stats-interval", "2", "--log-level", "debug", "--state-dir", state,
      ], in: lan, host: name)
  }

  private static func chat(_ name: String, host: String, state: String, service: String, lan: TestLAN) throws -> PeerProcess {
    try PeerProcess(name, ["chat", "--name", name, "--json", "--service", service, "--accept", "all", "--state-dir", state], in: lan, host: host)
  }

  @Test func aRelayKilledMidwayLosesNothingAndAnOfflinePeerGetsItsMessagesOnceInOrderAtAnotherSite() async throws {
    let lan = try await TestLAN(Self.segments)
    let service = LAN.uniqueServiceType().name
    let (nodes, servers) = try await Self.natsCluster(lan)
    let r3State = Repository.temporaryDirectory()
    let r1 = try Self.relay("r1", site: "site1", servers: servers, state: Repository.temporaryDirectory(), service: service, lan: lan)
    let r2 = try Self.relay("r2", site: "site2", servers: servers, state: Repository.temporaryDirectory(), service: service, lan: lan)
    var r3 = try Self.relay("r3", site: "site3", servers: servers, state: r3State, service: service, lan: lan)
    let carolState = Repository.temporaryDirectory()
    let alice = try Self.chat("alice", host: "alice", state: Repository.temporaryDirectory(), service: service, lan: lan)
    let carol = try Self.chat("carol", host: "carol", state: carolState, service: service, lan: lan)
    try await alice.expect("connected", within: .seconds(30), where: named("r1"))
    try await carol.expect("connected", within: .seconds(30), where: named("r3"))
    try await alice.expect("reachable", within: .seconds(60), where: named("carol"))
    try await carol.expect("reachable", within: .seconds(30), where: named("alice"))

    for n in 1...5 { alice.send("/msg carol before \(n)") }
    for n in 1...5 { try await carol.expect("message", within: .seconds(30), where: text("before \(n)")) }
    for _ in 1...5 { try await alice.expect("delivered", within: .seconds(30), where: named("carol")) }

    // r3 is SIGKILLed; alice goes on writing to carol; r3 comes back with its state.
    r3.child.terminate(SIGKILL)
    _ = await r3.wait()
    for n in 1...5 { alice.send("/msg carol during \(n)") }
    // carol's session with r3 waits to resume; r3's new process does not know it, so it
    // ends and a new one begins.
    try await carol.expect("reconnecting", within: .seconds(10), where: named("r3"))
    r3 = try Self.relay("r3", site: "site3", servers: servers, state: r3State, service: service, lan: lan)
    try await carol.expect("disconnected", within: .seconds(60), where: named("r3"))
    try await carol.expect("connected", within: .seconds(60), where: named("r3"))
    for n in 1...5 { try await carol.expect("message", within: .seconds(60), where: text("during \(n)")) }
    for _ in 1...5 { try await alice.expect("delivered", within: .seconds(60), where: named("carol")) }
    try await Task.sleep(for: .seconds(2))
    #expect(!carol.unconsumed.contains { $0.contains("\"event\":\"message\"") }, "no message shown twice: \(carol.unconsumed)")
    #expect(!alice.unconsumed.contains { $0.contains("\"event\":\"delivered\"") }, "one delivered each")

    // carol leaves; alice's 10 messages wait for her.
    carol.send("/quit")
    #expect(await carol.wait() == 0)
    try await alice.expect("unreachable", within: .seconds(30), where: named("carol"))
    for n in 1...10 { alice.send("/msg carol offline \(n)") }
    for _ in 1...10 { try await alice.expect("queued", within: .seconds(30), where: named("carol")) }
    alice.send("/peers")
    let relayed = try await alice.expect("relayed")
    let entry = (relayed["peers"] as? [[String: Any]])?.first { ($0["peer"] as? [String: Any])?["name"] as? String == "carol" }
    #expect(entry?["site"] as? String == "site3" && entry?["online"] as? Bool == false, "\(relayed.value)")

    // carol connects at site 2, with the same identity.
    let carol2 = try Self.chat("carol", host: "carol2", state: carolState, service: service, lan: lan)
    try await carol2.expect("connected", within: .seconds(30), where: named("r2"))
    var received: [String] = []
    for _ in 1...10 {
      let message = try await carol2.expect("message", within: .seconds(60), where: named("alice"))
      received.append(message["text"] as? String ?? "?")
    }
    #expect(received == (1...10).map { "offline \($0)" }, "once each, in order")
    for _ in 1...10 { try await alice.expect("delivered", within: .seconds(60), where: named("carol")) }
    try await Task.sleep(for: .seconds(2))
    #expect(!carol2.unconsumed.contains { $0.contains("\"event\":\"message\"") }, "no duplicate: \(carol2.unconsumed)")
    #expect(!alice.unconsumed.contains { $0.contains("\"event\":\"delivered\"") })
    let stats = try await r2.expectLine(containing: "event=stats", within: .seconds(10))
    #expect(stats.contains("nats=connected") && stats.contains("nats_delivered="), "\(stats)")

    for process in [alice, carol2, r1, r2, r3] { await process.stop() }
    for node in nodes { await node.stop() }
    await lan.down()
  }
}
