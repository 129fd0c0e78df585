import Testing

@testable import NearbyLab

#if canImport(Glibc)
  import Glibc
#endif

/// The harness against real Avahi: the self-test's checks (`nearby-lan selftest`), each a
/// test that fails with the checks that failed. Only as root inside the test run's own
/// private loopback host (scripts/test), where every namespace it makes is invisible outside.
@Suite(
  "Harness end to end (namespaces, real Avahi)", .serialized,
  .enabled(if: HarnessTestEnvironment.available, "needs root inside scripts/lan loopback (scripts/test) and a built nearby-lan"))
struct HarnessEndToEndTests {
  let selfTest = SelfTest(harness: LANHarness(executable: HarnessTestEnvironment.executable, environment: HarnessTestEnvironment.variables))

  /// Runs one part of the self-test, then checks that what it started is gone.
  func check(minimum: Int, _ part: (SelfTest.Report, inout SelfTest.Started) async -> Void, lans: [String] = []) async {
    let report = SelfTest.Report(echo: false)
    var started = SelfTest.Started()
    await part(report, &started)
    await selfTest.finish(started, lans: lans)
    await selfTest.leftovers(report, started, minimum: minimum)
    #expect(report.failures.isEmpty, "\(report.failures.joined(separator: "\n"))")
    #expect(report.passed > 0)
  }

  @Test func aLoopbackHostResolvesServicesAndLeavesNothing() async {
    await check(minimum: 2) { report, started in await selfTest.loopback(report, &started) }
  }

  @Test func twoHostsOnOneSegmentSeeEachOtherAndSurviveADaemonRestart() async {
    let id = "st\(getpid())-b"
    await check(minimum: 6, { report, started in await selfTest.twoHosts(id, report, &started) }, lans: [id])
  }

  @Test func twoSegmentsJoinedByOneHostStayApart() async {
    let id = "st\(getpid())-c"
    await check(minimum: 9, { report, started in await selfTest.twoSegments(id, report, &started) }, lans: [id])
  }

  @Test func aBadLANIsRefusedAndAFailedUpLeavesNothing() async throws {
    let harness = selfTest.harness
    await #expect(throws: LANError.usage("bad host name 'a-b': use 1-24 letters and digits")) { try await harness.up(id: "x1", segments: ["a-b"]) }
    let id = "st\(getpid())-d"
    try await harness.up(id: id, segments: ["a,b"])
    await #expect(throws: LANError.self) { try await harness.up(id: id, segments: ["a,b"]) }
    #expect(harness.list().contains(id), "a second up of the same ID leaves the first alone")
    try await harness.down(id: id)
    #expect(harness.namespaces(of: id).isEmpty && !harness.list().contains(id))
  }
}

/// Where the built harness is, and whether the end-to-end tests can run.
enum HarnessTestEnvironment {
  /// `.build/debug/nearby-lan` of this repository.
  static let executable: String = {
    let root = #filePath.split(separator: "/").dropLast(3).joined(separator: "/")
    return "/" + root + "/.build/debug/nearby-lan"
  }()

  static var variables: [String: String] { LANTool.currentEnvironment() }

  static var available: Bool {
    getuid() == 0 && variables["NEARBY_LAN"] == "loopback" && variables["NEARBY_AVAHI"] == "1" && access(executable, X_OK) == 0
  }
}
