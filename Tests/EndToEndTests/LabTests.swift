import NearbyTestSupport
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// The end-to-end tests of scripted peers run one at a time: each starts several processes
/// and daemons, and all of them at once would starve the timing-sensitive tests running
/// next to them on a small machine.
@Suite(
  "Scripted peers end to end (real processes, real Avahi)", .serialized, .enabled(if: LAN.avahiAvailable, "needs scripts/lan loopback (scripts/test)")
)
struct ScriptedPeersEndToEnd {}

extension ScriptedPeersEndToEnd {
  /// `nearby lab` runs of the examples (and a few made-up scripts) on private LANs with real
  /// Avahi, built from inside the test run's own `scripts/lan loopback`.
  @Suite("nearby lab runs the examples (private LANs, real Avahi)")
  struct LabTests {
    let service = ["NEARBY_SERVICE": LAN.uniqueServiceType().name]

    func expectPassed(_ run: NearbyRun, hosts: [String], sourceLocation: SourceLocation = #_sourceLocation) async throws {
      #expect(run.status == 0, "exit \(run.status):\n\(run.output)", sourceLocation: sourceLocation)
      let width = max(3, hosts.map(\.count).max() ?? 0)
      for host in hosts {
        #expect(
          run.output.contains("\(host.padding(to: width)) | # script passed"), "\(host) did not pass:\n\(run.output)", sourceLocation: sourceLocation)
      }
      #expect(run.output.contains("| passed: every host completed"), sourceLocation: sourceLocation)
      if let id = run.lanID { #expect(try await !namespacesRemain(of: id), "lan down left namespaces of \(id)", sourceLocation: sourceLocation) }
    }

    @Test func twoPeersChatOnTwoHosts() async throws {
      let run = try await runNearby(["lab", "--hosts", "alice,bob", "--scripts", LabPaths.example("two-peers")], environment: service)
      try await expectPassed(run, hosts: ["alice", "bob"])
      #expect(run.lanID != nil)
      #expect(run.output.contains("bob   | [") && run.output.contains("alice: hello bob"), "bob shows alice's message with her name")
    }

    @Test func twoPeersChatOnOneLoopbackHost() async throws {
      // Hosts from the script names; every peer in one namespace.
      let run = try await runNearby(["lab", "--loopback", "--scripts", LabPaths.example("two-peers")], environment: service)
      try await expectPassed(run, hosts: ["alice", "bob"])
      #expect(run.output.contains("share one loopback network"))
    }

    @Test func invitationDeclined() async throws {
      let run = try await runNearby(["lab", "--hosts", "alice,bob", "--scripts", LabPaths.example("declined")], environment: service)
      try await expectPassed(run, hosts: ["alice", "bob"])
      #expect(run.output.contains("declined your invitation (declined)"))
    }

    @Test func relayBetweenTwoSegments() async throws {
      let run = try await runNearby(
        ["lab", "--segments", "a,r", "--segments", "r,c", "--scripts", LabPaths.example("relay")], environment: service, timeout: .seconds(120))
      try await expectPassed(run, hosts: ["a", "c"])
      let relayLines = run.output.split(separator: "\n").filter { $0.hasPrefix("r ") && $0.contains("| ts=") }
      #expect(!relayLines.isEmpty, "the relay's log lines are streamed with its host name")
    }

    @Test func aFailingScriptFailsTheLabStopsTheOthersAndCleansUp() async throws {
      let directory = try scriptsDirectory([
        "alice.script": "expect found bob within 20s\nexpect message from bob \"never sent\" within 1s\n",
        "bob.script": "sleep 1m\n",
        "carol.cmd": "# a service that outlives everyone\nsleep 1000\n",
      ])
      defer { removeDirectory(directory) }
      let run = try await runNearby(["lab", "--scripts", directory, "--timeout", "60"], environment: service)
      #expect(run.status == 1, "\(run.output)")
      #expect(
        run.output.contains("alice | nearby chat: script failed: \(directory)/alice.script:2: expect message from bob \"never sent\" within 1s"))
      #expect(run.output.contains("alice |   timed out: no matching event within 1s"))
      #expect(run.output.contains("alice |   the last events seen"))
      #expect(run.output.contains("lab   | alice failed with exit code 1; stopping bob, carol"))
      #expect(run.output.contains("lab   | failed: alice exited with 1"))
      #expect(run.elapsed < .seconds(30), "the others were stopped, not waited for")
      let id = try #require(run.lanID)
      #expect(try await !namespacesRemain(of: id))
    }

    @Test func aCommandRunsInEveryHostWithItsName() async throws {
      let run = try await runNearby(["lab", "--hosts", "a,b", "--", "sh", "-c", "echo hello from {host} as $NEARBY_NAME; echo oops >&2"])
      #expect(run.status == 0, "\(run.output)")
      #expect(run.output.contains("a   | hello from a as a"))
      #expect(run.output.contains("b   | hello from b as b"))
      #expect(run.output.contains("b   | oops"))
    }

    @Test func sigtermStopsEverythingAndCleansUp() async throws {
      let directory = try scriptsDirectory(["alice.script": "sleep 2m\n", "bob.script": "sleep 2m\n"])
      defer { removeDirectory(directory) }
      let run = try await runNearby(["lab", "--scripts", directory], environment: service, signal: (SIGTERM, after: .seconds(3)))
      #expect(run.status == 128 + SIGTERM, "\(run.output)")
      #expect(run.output.contains("SIGTERM: stopping"))
      #expect(run.output.contains("stopped by SIGTERM at line 1"), "the scripts were told to stop")
      let id = try #require(run.lanID)
      #expect(try await !namespacesRemain(of: id))
    }

    @Test func badScriptsAreRefusedBeforeAnythingIsBuilt() async throws {
      let directory = try scriptsDirectory(["alice.script": "expect found bob within 5\n", "bob.script": "invit alice\n"])
      defer { removeDirectory(directory) }
      let run = try await runNearby(["lab", "--scripts", directory])
      #expect(run.status == 64)
      #expect(run.output.contains("\(directory)/alice.script:1:25: bad duration '5': it has no unit"))
      #expect(run.output.contains("\(directory)/bob.script:1:1: unknown command 'invit'"))
      #expect(run.output.contains("nearby lab: 2 files have errors"))
      #expect(run.lanID == nil)
    }

    @Test func usageErrors() async throws {
      let cases: [([String], String)] = [
        (["lab", "--hosts", "a,b"], "nothing to run"),
        (["lab", "--hosts", "a-b", "--", "true"], "invalid host name 'a-b'"),
        (["lab", "--loopback", "--segments", "a,b", "--", "true"], "--loopback and --segments exclude each other"),
        (["lab", "--segments", "a,r", "r,c"], "looks like a segment, not a command"),
        (["lab", "--scripts", "/nonexistent"], "not a readable directory"),
        (["lab", "--hosts", "a", "--timeout", "soon", "--", "true"], "invalid --timeout 'soon'"),
      ]
      for (arguments, message) in cases {
        let run = try await runNearby(arguments)
        #expect(run.status == 64, "\(arguments): \(run.output)")
        #expect(run.output.contains(message), "\(arguments): \(run.output)")
      }
    }
  }
}

/// `nearby lab` where it cannot isolate the peers: run as an unprivileged user it says so and
/// runs nothing (user namespaces may work, but avahi-daemon needs root).
@Suite("nearby lab without isolation")
struct LabWithoutIsolationTests {
  static let setpriv: String? = ["/usr/bin/setpriv", "/bin/setpriv"].first { (path: String) in access(path, X_OK) == 0 }

  @Test(.enabled(if: getuid() == 0 && setpriv != nil, "needs root to become another user (setpriv)"))
  func noRootNoLab() async throws {
    let nobody = ["--reuid=65534", "--regid=65534", "--clear-groups", "--"]
    let run = try await runNearby(["lab", "--hosts", "a,b", "--", "true"], launcher: [Self.setpriv!] + nobody)
    #expect(run.status == 1, "\(run.output)")
    #expect(run.output.contains("nearby lab: cannot isolate the peers here: it needs root (or user namespaces)"), "\(run.output)")
    #expect(run.output.contains("lan: "), "the harness's own words follow")
    #expect(!run.output.contains("building LAN"), "nothing was built")
  }

  @Test func noHarnessNoLab() async throws {
    // A nearby without a nearby-lan next to it, none in PATH, and a wrong NEARBY_LAN_SCRIPT.
    let directory = try scriptsDirectory([:])
    defer { removeDirectory(directory) }
    let copy = directory + "/nearby"
    let copied = try await NearbyTestSupport.run(["/bin/cp", LabPaths.nearby, copy])
    try #require(copied.status == 0, "\(copied.output)")
    let lab = try await runNearby(
      ["lab", "--hosts", "a,b", "--", "true"], environment: ["NEARBY_LAN_SCRIPT": "/nonexistent/lan", "PATH": "/usr/bin:/bin"], executable: copy)
    #expect(lab.status == 1)
    #expect(lab.output.contains("cannot find the private-LAN harness nearby-lan (looked at: \(directory)/nearby-lan;"), "\(lab.output)")
    #expect(lab.output.contains("NEARBY_LAN_SCRIPT=/nonexistent/lan (not an executable file)"))
  }
}

extension String {
  fileprivate func padding(to width: Int) -> String { count >= width ? self : self + String(repeating: " ", count: width - count) }
}
