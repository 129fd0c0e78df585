import NearbyTestSupport
import Testing

#if canImport(Glibc)
  import Glibc
#endif

extension ScriptedPeersEndToEnd {
  /// `nearby chat --script` as a process, on the test run's loopback host.
  @Suite("nearby chat --script (a process, real Avahi)")
  struct ScriptCLITests {
    let service = ["NEARBY_SERVICE": LAN.uniqueServiceType().name]

    /// The peer's state directory (each test removes it at its end).
    let state = (try? scriptsDirectory([:])) ?? "/tmp/nearby-labtest-state"

    func chat(_ name: String, script: String, extra: [String] = []) -> [String] {
      ["chat", "--name", name, "--state-dir", state, "--script", script] + extra
    }

    @Test func aScriptFromStandardInputRunsToItsEnd() async throws {
      let script = """
        expect ready within 5s
        expect advertised /^solo/ within 10s
        peers
        expect peers "* no peers found yet"
        say nobody hears this
        expect error /nobody is connected|no peer/ within 5s
        """
      defer { removeDirectory(state) }
      let run = try await runNearby(chat("solo", script: "-"), environment: service, input: script)
      #expect(run.status == 0, "\(run.output)")
      #expect(run.output.contains("# 2: matched after"))
      #expect(run.output.contains("# script passed: 6 steps"))
    }

    @Test func jsonOutputHasStepMatchedAndFailedEvents() async throws {
      let script = "expect ready\nexpect message from nobody within 300ms\n"
      defer { removeDirectory(state) }
      let run = try await runNearby(chat("solo", script: "-", extra: ["--json"]), environment: service, input: script)
      #expect(run.status == 1, "\(run.output)")
      #expect(run.output.contains(#"{"event":"step","line":1,"step":"expect ready"}"#))
      #expect(run.output.contains(#"{"event":"matched","line":1,"ms":"#))
      #expect(run.output.contains(#"{"event":"failed","line":2,"step":"expect message from nobody within 300ms","message":"<stdin>:2:"#))
      #expect(run.output.contains("nearby chat: script failed: <stdin>:2: expect message from nobody within 300ms"))
    }

    @Test func aCommandNamingAnUnknownPeerFailsWithAHint() async throws {
      defer { removeDirectory(state) }
      let run = try await runNearby(chat("solo", script: "-"), environment: service, input: "invite zed lunch?\nsay unreached\n")
      #expect(run.status == 1)
      #expect(run.output.contains("<stdin>:1: invite zed lunch?"))
      #expect(run.output.contains("the chat refused the command: no peer called 'zed'"))
      #expect(run.output.contains("hint: a peer must be found before a command names it: put 'expect found zed' before this line"))
      #expect(!run.output.contains("# 2:"), "the script stopped at line 1")
    }

    @Test func aBadScriptIsAUsageErrorBeforeTheSessionStarts() async throws {
      defer { removeDirectory(state) }
      let run = try await runNearby(chat("solo", script: "-"), environment: service, input: "expect conected bob\n")
      #expect(run.status == 64)
      #expect(run.output.contains("<stdin>:1:8: unknown event 'conected'"))
      #expect(run.output.contains("hint: did you mean 'connected'?"))
      #expect(!run.output.contains("* ready"))
    }

    @Test func sigintStopsAScriptWith130() async throws {
      defer { removeDirectory(state) }
      let run = try await runNearby(chat("solo", script: "-"), environment: service, input: "sleep 1m\n", signal: (SIGINT, after: .seconds(1)))
      #expect(run.status == 130, "\(run.output)")
      #expect(run.output.contains("stopped by SIGINT at line 1"))
    }
  }
}
