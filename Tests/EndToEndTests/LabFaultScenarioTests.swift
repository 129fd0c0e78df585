import Foundation
import NearbyTestSupport
import Testing

extension ScriptedPeersEndToEnd {
  /// The scenarios of `Examples/faults` through `nearby lab`, on private LANs with real Avahi:
  /// each is self-checking (its scripts fail on a lost, repeated or reordered message), and
  /// the test checks the output again and prints how long healing took.
  @Suite("Sessions survive faults (Examples/faults, nearby lab)")
  struct LabFaultScenarioTests {
    let service = ["NEARBY_SERVICE": LAN.uniqueServiceType().name]

    func expectPassed(_ run: TimedLabRun, sourceLocation: SourceLocation = #_sourceLocation) async throws {
      #expect(run.status == 0, "exit \(run.status):\n\(run.output)", sourceLocation: sourceLocation)
      #expect(run.output.contains("| passed: every host completed"), sourceLocation: sourceLocation)
      if let id = run.lanID { #expect(try await !namespacesRemain(of: id), "lan down left namespaces of \(id)", sourceLocation: sourceLocation) }
    }

    static func seconds(_ duration: Duration) -> String {
      String(format: "%.2f s", Double(duration.components.attoseconds) / 1e18 + Double(duration.components.seconds))
    }

    @Test func tenPercentLossBothWaysDeliversAThousandMessagesOnceInOrder() async throws {
      let run = try await runTimedLab(["lab", "--hosts", "alice,bob", "--scripts", LabPaths.example("faults/loss")], environment: service)
      try await expectPassed(run)
      #expect(run.messages(at: "bob", from: "alice") == (1...1000).map { "m\($0)" })
      #expect(run.lines(of: "alice").filter { $0.text.hasPrefix("* delivered #") }.count == 1000)
      let lossAt = try #require(run.first("lab", containing: "loss alice 10%")).at
      let last = try #require(run.last("alice", containing: "* delivered #")).at
      print("fault figures: 1000 messages at 10% loss, the last one confirmed \(Self.seconds(last - lossAt)) after the loss began")
    }

    @Test func aTenSecondPartitionHealsWithoutAnInvitationAndEveryMessageArrivesOnce() async throws {
      let run = try await runTimedLab(["lab", "--hosts", "alice,bob", "--scripts", LabPaths.example("faults/partition")], environment: service)
      try await expectPassed(run)
      try checkTwentyMessages(run, fault: "partition alice bob", heal: "heal", figure: "a 10 s partition")
    }

    @Test func aLinkDownAndUpHealsTheSameWay() async throws {
      let run = try await runTimedLab(["lab", "--hosts", "alice,bob", "--scripts", LabPaths.example("faults/link-flap")], environment: service)
      try await expectPassed(run)
      try checkTwentyMessages(run, fault: "link bob down", heal: "link bob up", figure: "bob's link down for 8 s")
      #expect(run.lines(of: "alice").filter { $0.text.hasPrefix("* lost bob") }.count <= 1, "no flapping")
    }

    @Test func aPausedPeerGetsEveryMessageOnceWhenItRunsAgain() async throws {
      let run = try await runTimedLab(["lab", "--hosts", "alice,bob", "--scripts", LabPaths.example("faults/pause")], environment: service)
      try await expectPassed(run)
      try checkTwentyMessages(run, fault: "pause bob", heal: "resume bob", figure: "bob stopped for 8 s")
    }

    /// Alice — r — carol on two segments, alice's link down for 8 s while she sends to carol
    /// through the relay: what she sent before the loss was noticed and what she sent after
    /// (while carol stayed addressable) arrives once each, in order, and nothing is refused or
    /// reported unreachable meanwhile.
    @Test func aRelaysLinkFlapLosesAndRefusesNothing() async throws {
      let run = try await runTimedLab(
        ["lab", "--segments", "a,r", "--segments", "r,c", "--scripts", LabPaths.example("faults/relay-flap")], environment: service)
      try await expectPassed(run)
      let expected = (1...10).map { "before \($0)" } + (1...10).map { "during \($0)" } + ["bye"]
      #expect(run.messages(at: "c", from: "a") == expected)
      let cut = try #require(run.first("lab", containing: "link a down")).at
      let reported = try #require(run.first("a", containing: "* lost the connection to r")).at
      let back = try #require(run.first("a", containing: "* reconnected to r")).at
      let during = run.lines(of: "a").filter { $0.at >= cut && $0.at <= back }
      #expect(!during.contains { $0.text.contains("cannot be reached") }, "carol stayed addressable: \(during.map(\.text))")
      #expect(!run.lines(of: "a").contains { $0.text.contains("not sent") || $0.text.contains("not delivered") })
      let deliveries = run.lines(of: "a").filter { $0.text.hasPrefix("* delivered #") }
      #expect(deliveries.count == 21)
      let healed = try #require(run.first("lab", containing: "link a up")).at
      let last = try #require(deliveries.count >= 20 ? deliveries[19] : nil).at
      print(
        "fault figures: alice's link to the relay down for 8 s: reported \(Self.seconds(reported - cut)) after the fault;"
          + " back \(Self.seconds(back - healed)) after it ended; the 20th message confirmed \(Self.seconds(last - healed)) after")
    }

    /// The 20 messages of a partition-like scenario: once each, in order, without an invitation
    /// after the first; prints how long after the heal the last one arrived.
    func checkTwentyMessages(_ run: TimedLabRun, fault: String, heal: String, figure: String) throws {
      let expected = (1...10).map { "before \($0)" } + (1...10).map { "during \($0)" }
      #expect(run.messages(at: "bob", from: "alice") == expected)
      #expect(run.lines(of: "bob").filter { $0.text.contains("invites you") }.count == 1, "one invitation, before the fault")
      #expect(!run.lines(of: "alice").contains { $0.text.contains("disconnected") && !$0.text.contains("you quit") })
      let cut = try #require(run.first("lab", containing: fault)).at
      let healed = try #require(run.first("lab", containing: " \(heal)")).at
      let reported = try #require(run.first("alice", containing: "* reconnecting to bob")).at
      let back = try #require(run.first("alice", containing: "* reconnected to bob")).at
      let last = try #require(run.lines(of: "bob").last { $0.text.hasSuffix("alice: during 10") }).at
      print(
        "fault figures: \(figure): reported reconnecting \(Self.seconds(reported - cut)) after the fault; reconnected \(Self.seconds(back - healed))"
          + " and the 20th message delivered \(Self.seconds(last - healed)) after it ended")
    }

    @Test func bothAvahiDaemonsRestartAndThePeersAreFoundAgain() async throws {
      let run = try await runTimedLab(["lab", "--hosts", "alice,bob", "--scripts", LabPaths.example("faults/avahi-restart")], environment: service)
      try await expectPassed(run)
      #expect(!run.output.contains("not a Nearby peer"), "a daemon going away is not a foreign record")
      for (host, other, daemon) in [("alice", "bob", "avahi alice restart"), ("bob", "alice", "avahi bob restart")] {
        let restarted = try #require(run.first("lab", containing: daemon)).at
        let found = try #require(run.lines(of: host).first { $0.at > restarted && $0.text.hasPrefix("* found \(other)") }).at
        print("fault figures: \(daemon): \(host) found \(other) again \(Self.seconds(found - restarted)) after the restart")
      }
    }

    /// `NEARBY_WRITE_SOAK=1` writes it (after a change to ``SoakPlan``).
    @Test func theSoakFileIsTheOneThePlanMakes() throws {
      if ProcessInfo.processInfo.environment["NEARBY_WRITE_SOAK"] == "1" {
        try SoakPlan.faults(seconds: 60).write(toFile: LabPaths.example("faults/soak/faults"), atomically: true, encoding: .utf8)
      }
      let checkedIn = try String(contentsOfFile: LabPaths.example("faults/soak/faults"), encoding: .utf8)
      #expect(checkedIn == SoakPlan.faults(seconds: 60))
    }

    /// Twenty peers joining, leaving and flapping for 60 s (NEARBY_SOAK_SECONDS to change it):
    /// the hub's memory, threads and descriptors stay within 10% of what they were after the
    /// warm-up, and each message the hub sent to a peer was delivered or reported failed.
    @Test func twentyPeersJoiningLeavingAndFlappingLeakNothingAndLoseNoMessageSilently() async throws {
      let seconds = ProcessInfo.processInfo.environment["NEARBY_SOAK_SECONDS"].flatMap(Int.init) ?? 60
      var directory: String?
      var scripts = LabPaths.example("faults/soak")
      if seconds != 60 {
        let hub = try String(contentsOfFile: scripts + "/hub.cmd", encoding: .utf8)
        directory = try scriptsDirectory(["hub.cmd": hub, "faults": SoakPlan.faults(seconds: seconds)])
        scripts = directory!
      }
      defer { if let directory { removeDirectory(directory) } }
      var environment = service
      environment["SOAK_SECONDS"] = String(seconds)
      let run = try await runTimedLab(
        [
          "lab", "--hosts", SoakPlan.hosts(), "--scripts", scripts, "--timeout", String(seconds + 120), "--", "sh",
          LabPaths.example("faults/soak/peer.sh"),
        ], environment: environment, timeout: .seconds(Int64(seconds + 180)))
      #expect(run.status == 0, "exit \(run.status):\n\(run.output.suffix(20_000))")
      // NEARBY_SOAK_LOG=FILE keeps the whole output (the samples, every host's lines).
      if let log = ProcessInfo.processInfo.environment["NEARBY_SOAK_LOG"] {
        try? run.output.write(toFile: log, atomically: true, encoding: .utf8)
      }
      let report = SoakReport(run)
      print("fault figures: soak of \(seconds) s, 20 peers: \(report.summary)")
      #expect(report.samples.count >= 5, "the hub sampled itself:\n\(run.output.suffix(5000))")
      for problem in report.problems { Issue.record(Comment(rawValue: problem)) }
    }
  }
}
