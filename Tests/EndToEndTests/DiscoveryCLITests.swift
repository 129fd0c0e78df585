import Foundation
import NearbyCore
import NearbySystem
import NearbyTestSupport
import NearbyTransport
import Testing

/// `nearby` processes across the hosts of a private veth LAN, with a real avahi-daemon each.
@Suite("Discovery end to end (nearby processes, real Avahi)", .enabled(if: LAN.avahiAvailable, "needs scripts/lan loopback"))
struct DiscoveryCLITests {
  @Test func anAdvertiserOnOneHostIsFoundOnAnotherWithItsRecordAndLostWhenItQuitsOrIsKilled() async throws {
    try await TestLAN.with(["a,b"]) { lan in
      let service = LAN.uniqueServiceType().name
      let addressA = try await lan.address("a")
      let alice = try PeerProcess(
        "alice", ["chat", "--name", "alice", "--json", "--service", service, "--info", "room=lab", "--state-dir", Repository.temporaryDirectory()],
        in: lan,
        host: "a")
      let ready = try await alice.expect("ready")
      let browse = try PeerProcess("browse-b", ["browse", "--json", "--service", service, "--timeout", "30"], in: lan, host: "b")
      let found = try await browse.expect("found") { ($0["peer"] as? [String: Any])?["name"] as? String == "alice" }
      #expect(found.string("peer.id") == ready.string("id"))
      #expect((found["addresses"] as? [String]) == [addressA])
      #expect(found["port"] as? Int == ready["port"] as? Int)
      #expect((found["info"] as? [String: String]) == ["room": "lab"])

      // A graceful quit withdraws the advertisement.
      alice.send("/quit")
      #expect(await alice.wait() == 0)
      try await browse.expect("lost") { ($0["peer"] as? [String: Any])?["name"] as? String == "alice" }

      // SIGKILL: the daemon withdraws the records of a client that vanished.
      let again = try PeerProcess(
        "alice2", ["chat", "--name", "alice", "--json", "--service", service, "--state-dir", Repository.temporaryDirectory()], in: lan, host: "a")
      try await again.expect("advertised")
      try await browse.expect("found") { ($0["peer"] as? [String: Any])?["name"] as? String == "alice" }
      again.child.terminate(SIGKILL)
      try await browse.expect("lost", within: .seconds(20))
      await browse.stop()
    }
  }

  @Test func servicesFromAvahiPublishAreReportedByNearbyBrowse() async throws {
    let service = LAN.uniqueServiceType()
    let id = PeerID.random()
    let publisher = try PeerProcess.raw(["avahi-publish", "-s", "zoë", service.type, "7070", "id=\(id.hex)", "name=zoë", "v=1", "room=attic"])
    defer { publisher.terminate(SIGKILL) }
    let browse = try PeerProcess("browse", ["browse", "--json", "--service", service.name, "--timeout", "15"])
    let found = try await browse.expect("found")
    #expect(found.string("peer.id") == id.hex)
    #expect(found.string("peer.name") == "zoë")
    #expect(found["port"] as? Int == 7070)
    #expect((found["info"] as? [String: String]) == ["room": "attic"])
    await browse.stop()
  }

  @Test func withoutADaemonBrowseFailsAtOnceWithTheFix() async throws {
    let started = ContinuousClock.now
    let (status, output) = try await run(
      [Repository.lan, "loopback", "--no-avahi", "--", Repository.nearby, "browse", "--timeout", "30"], timeout: .seconds(40))
    #expect(status == 1)
    #expect(output.contains("avahi-daemon is not running"))
    #expect(output.contains("kDNSServiceErr_Unknown"))
    #expect(output.contains("start it with"))
    #expect(ContinuousClock.now - started < .seconds(15))
  }

  @Test func theAdvertiserRegistersAgainWhenTheDaemonComesBack() async throws {
    try await TestLAN.with(["a,b"]) { lan in
      let service = LAN.uniqueServiceType().name
      let alice = try PeerProcess(
        "alice", ["chat", "--name", "alice", "--json", "--service", service, "--state-dir", Repository.temporaryDirectory()], in: lan, host: "a")
      try await alice.expect("advertised")
      try await lan.avahi("a", "stop")
      let failure = try await alice.expect("error") { ($0["message"] as? String)?.contains("avahi-daemon is not running") == true }
      #expect((failure["message"] as? String)?.contains("start it with") == true)
      try await lan.avahi("a", "start")
      try await alice.expect("advertised", within: .seconds(40))
      let browse = try PeerProcess("browse-b", ["browse", "--json", "--service", service, "--timeout", "20"], in: lan, host: "b")
      try await browse.expect("found") { ($0["peer"] as? [String: Any])?["name"] as? String == "alice" }
      await browse.stop()
      await alice.stop()
    }
  }
}

extension PeerProcess {
  /// A plain child process (not `nearby`) with no pipes.
  static func raw(_ command: [String]) throws -> ChildProcessHandle {
    ChildProcessHandle(try ChildProcess(command[0], Array(command.dropFirst()), standardInput: .null, standardOutput: .null, standardError: .null))
  }
}

struct ChildProcessHandle {
  let child: ChildProcess
  init(_ child: ChildProcess) { self.child = child }
  func terminate(_ signal: Int32) { child.terminate(signal) }
}
