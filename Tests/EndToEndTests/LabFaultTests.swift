import NearbyTestSupport
import Testing

#if canImport(Glibc)
  import Glibc
#endif

extension ScriptedPeersEndToEnd {
  /// `nearby lab` with a faults file: faults run at their times or when a host prints a
  /// matching line, each reported as `lab | 12.3s FAULT`, and the hosts see their effect.
  @Suite("nearby lab injects faults (DIR/faults)")
  struct LabFaultTests {
    let service = ["NEARBY_SERVICE": LAN.uniqueServiceType().name]

    func lines(_ run: NearbyRun) -> [String] { run.output.split(separator: "\n").map(String.init) }

    @Test func aPartitionCutsTwoChattingPeersApart() async throws {
      let directory = try scriptsDirectory([
        "alice.script": "expect found bob within 20s\ninvite bob\nexpect connected bob within 10s\nexpect reconnecting bob within 10s\n",
        "bob.script":
          "expect invitation from alice within 20s\naccept alice\nexpect connected alice within 10s\nexpect reconnecting alice within 10s\n",
        "faults": "# cut them apart once they talk\nwhen alice prints /connected to bob/ after 0.5s partition alice bob\n",
      ])
      defer { removeDirectory(directory) }
      let run = try await runNearby(["lab", "--scripts", directory, "--timeout", "90"], environment: service)
      #expect(run.status == 0, "\(run.output)")
      let fault = lines(run).first { $0.hasPrefix("lab   | ") && $0.contains("s partition alice bob (0.5s after alice printed: * connected to bob") }
      #expect(fault != nil, "the fault is reported with its time and trigger:\n\(run.output)")
      #expect(run.output.contains("reconnecting to bob"), "alice notices, and tries to reach bob again")
      if let id = run.lanID { #expect(try await !namespacesRemain(of: id)) }
    }

    @Test func aKilledHostIsDownUntilItIsRestartedOnLoopback() async throws {
      let directory = try scriptsDirectory(["faults": "when b prints \"started b\" kill b\nat 1s restart b\nat 10m pause a\n"])
      defer { removeDirectory(directory) }
      let run = try await runNearby(["lab", "--loopback", "--hosts", "a,b", "--scripts", directory, "--", "sh", "-c", "echo started {host}; sleep 2"])
      #expect(run.status == 0, "\(run.output)")
      let all = lines(run)
      #expect(all.filter { $0 == "b   | started b" }.count == 2, "b started twice:\n\(run.output)")
      #expect(all.contains { $0.hasPrefix("lab | ") && $0.hasSuffix("s kill b (b printed: started b)") }, "\(run.output)")
      #expect(all.contains { $0.hasPrefix("lab | 1.") && $0.hasSuffix("s restart b") }, "\(run.output)")
      #expect(all.contains("lab | b is down (exit 137) until a restart"), "\(run.output)")
      #expect(all.contains("lab | b completed (exit 0)"))
      #expect(all.contains("lab | a fault did not run before the end (faults line 3)"), "\(run.output)")
    }

    @Test func aPausedHostPrintsNothingUntilResumed() async throws {
      let directory = try scriptsDirectory([
        "faults": "when a prints \"tick 3\" pause a\nwhen a prints \"tick 3\" after 1s resume a\n"
      ])
      defer { removeDirectory(directory) }
      let run = try await runNearby([
        "lab", "--hosts", "a", "--scripts", directory, "--", "sh", "-c", "i=0; while [ $i -lt 15 ]; do echo tick $i; i=$((i+1)); sleep 0.1; done",
      ])
      #expect(run.status == 0, "\(run.output)")
      let all = lines(run)
      let paused = try #require(all.firstIndex { $0.contains("s pause a (a printed: tick 3)") }, "\(run.output)")
      let resumed = try #require(all.firstIndex { $0.contains("s resume a (1.0s after a printed: tick 3)") }, "\(run.output)")
      let ticksWhilePaused = all[paused..<resumed].filter { $0.hasPrefix("a   | tick") }
      #expect(ticksWhilePaused.count <= 1, "at most the line already on its way: \(ticksWhilePaused)")
      #expect(all.contains("a   | tick 14"), "it went on after the resume")
    }

    @Test func aFaultsFileThatDoesNotFitTheLabIsRefusedBeforeAnythingRuns() async throws {
      let directory = try scriptsDirectory(["faults": "at 1s partition a c\nat 2s loss a 50\n"])
      defer { removeDirectory(directory) }
      let run = try await runNearby(["lab", "--hosts", "a,b", "--scripts", directory, "--", "true"])
      #expect(run.status == 64, "\(run.output)")
      #expect(run.output.contains("\(directory)/faults:1:19: no host 'c' in this lab"), "\(run.output)")
      #expect(run.output.contains("hint: the hosts are a, b"))
      #expect(run.output.contains("\(directory)/faults:2:14: bad loss '50'"), "\(run.output)")
      #expect(run.lanID == nil)
    }
  }
}
