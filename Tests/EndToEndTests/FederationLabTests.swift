import Foundation
import NearbySystem
import NearbyTestSupport
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// `Examples/federation` through `nearby lab`: three sites whose segments cannot reach each
/// other, a relay on each with a foot on a backbone, a 3-node NATS cluster on the backbone
/// (one node is killed half-way), and a capture of every frame on the backbone.
@Suite(
  "nearby lab runs Examples/federation (three sites, NATS on a backbone)",
  .enabled(
    if: LAN.avahiAvailable && FileManager.default.isExecutableFile(atPath: "/usr/sbin/nats-server"), "needs scripts/lan loopback and nats-server"),
  .enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/tcpdump"), "needs tcpdump (scripts/install-deps)")
)
struct FederationLabTests {
  /// The backbone first: the lab starts hosts in that order, so the NATS nodes are up when
  /// the relays connect (each relay lists its own node first: r1 uses n1).
  static let segments = ["n1,n2,n3,r1,r2,r3", "alice,r1", "bob,r2", "carol,r3"]
  /// Every message the scripts send.
  static let texts = [
    "hello from site 1", "just for you, carol", "hello alice, from site 3", "hello everyone, from site 3", "still here after n1 went down",
    "glad to hear",
  ]

  @Test func threeSitesChatThroughNATSAndTheBackboneCarriesNoMessageText() async throws {
    let capture = Repository.temporaryDirectory("nearby-capture") + "/backbone.pcap"
    let arguments = ["lab"] + Self.segments.flatMap { ["--segments", $0] } + ["--scripts", LabPaths.example("federation"), "--timeout", "150"]
    let run = try await runCapturingSegment(1, of: arguments, into: capture, timeout: .seconds(180))
    #expect(run.status == 0, "exit \(run.status):\n\(run.output)")
    for host in ["alice", "bob", "carol"] {
      #expect(
        run.output.contains("\(host.padding(toLength: 5, withPad: " ", startingAt: 0)) | # script passed"), "\(host) did not pass:\n\(run.output)")
    }
    #expect(run.output.contains("kill n1"), "the faults file killed a NATS node")
    // r1 used n1 (10.77.1.1, the first server it lists): it failed over to another node.
    let r1 = run.output.split(separator: "\n").filter { $0.hasPrefix("r1 ") && $0.contains("event=nats state=") }
    #expect(r1.first?.contains("state=connected server=nats://10.77.1.1:4222") == true, "r1 did not start on n1: \(r1)")
    #expect(r1.contains { $0.contains("state=reconnected") && !$0.contains("10.77.1.1") }, "r1 did not fail over: \(r1)")
    let frames = try Data(contentsOf: URL(fileURLWithPath: capture))
    // The capture holds the relays' NATS traffic (subjects are in the clear)...
    // (Once in CI it held 4344 bytes and no subject: what tcpdump said, and when it started.)
    let log = (try? String(contentsOfFile: capture + ".log", encoding: .utf8)) ?? "(no log)"
    #expect(
      frames.range(of: Data("nearby.v2.peer.".utf8)) != nil, "the capture saw the backbone's NATS traffic (\(frames.count) bytes); tcpdump:\n\(log)")
    // ...and not one message text: what crosses the backbone is sealed end to end.
    for text in Self.texts { #expect(frames.range(of: Data(text.utf8)) == nil, "'\(text)' crossed the backbone in the clear") }
    if let id = run.lanID { #expect(try await !namespacesRemain(of: id)) }
  }
}

/// Runs `nearby ARGUMENTS` (a lab) while tcpdump captures every frame of the lab's segment
/// `segment` on its bridge (inside the LAN's bridge namespace, where the bridge sees all of
/// the segment's traffic), into `file`.
func runCapturingSegment(_ segment: Int, of arguments: [String], into file: String, timeout: Duration) async throws -> NearbyRun {
  let output = try OutputCapture()
  let started = ContinuousClock.now
  let lab = try ChildProcess(
    LabPaths.nearby, arguments, standardInput: .null, standardOutput: .descriptor(output.writeFD), standardError: .descriptor(output.writeFD))
  output.closeWriteEnd()
  let reading = Task { await output.read() }
  // The lab names its LAN lab<pid>-<hex>: its bridges live in nbbr-lab<pid>-<hex>.
  var tcpdump: ChildProcess?
  while tcpdump == nil, lab.exitStatus == nil, ContinuousClock.now - started < .seconds(60) {
    let (_, namespaces) = try await NearbyTestSupport.run(["ip", "netns", "list"])
    if let namespace = namespaces.split(separator: "\n").map({ String($0.split(separator: " ").first ?? "") }).first(where: {
      $0.hasPrefix("nbbr-lab\(lab.pid)-")
    }) {
      // tcpdump's own words (listening on ..., packets dropped by kernel) go to FILE.log.
      let log = open(file + ".log", O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0o644)
      defer { if log >= 0 { close(log) } }
      let candidate = try ChildProcess(
        "ip", ["netns", "exec", namespace, "tcpdump", "-i", "br\(segment)", "-U", "-s", "0", "-w", file], standardInput: .null,
        standardOutput: .null, standardError: log >= 0 ? .descriptor(log) : .null)
      try await Task.sleep(for: .milliseconds(300))
      // Not there yet (the bridge is made a moment after the namespace): again.
      if candidate.exitStatus == nil {
        tcpdump = candidate
        let note = "(the test took this tcpdump \(ContinuousClock.now - started) after starting the lab)\n"
        if log >= 0 { _ = note.utf8CString.withUnsafeBufferPointer { write(log, $0.baseAddress, $0.count - 1) } }
      }
    } else {
      try await Task.sleep(for: .milliseconds(50))
    }
  }
  let watchdog = Task {
    try await Task.sleep(for: timeout)
    lab.terminate(SIGKILL)
  }
  let status = await lab.wait()
  watchdog.cancel()
  tcpdump?.terminate(SIGINT)
  await tcpdump?.wait()
  output.childExited()
  let text = await reading.value
  guard tcpdump != nil else { throw WaitError(description: "tcpdump never started on the lab's segment \(segment):\n\(text)") }
  return NearbyRun(status: status, output: text, elapsed: ContinuousClock.now - started)
}
