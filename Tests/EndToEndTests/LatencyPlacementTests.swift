import Testing

@testable import NearbyBench

/// The latency benchmark tells which round trips had both ends on one CPU, and can keep the
/// ends apart: the figures that compare us with raw TCP depend on it (README, "What decides
/// the round trip").
@Suite("The latency benchmark's CPU placements", .enabled(if: Pinning.worthRunning, "needs two CPUs"))
struct LatencyPlacementTests {
  static let frame = [UInt8](repeating: 0x61, count: 80)

  @Test(arguments: [EndCPUs(asking: 0, answering: 1), EndCPUs(asking: 1, answering: 1)])
  func rawTCPEndsRunWhereTheyArePinned(cpus: EndCPUs) async {
    let trips = await RawTCP.pingPong(frame: Self.frame, rounds: 200, cpus: cpus)
    #expect(trips.count == 200)
    #expect(BenchRunner.shareOnOneCPU(trips) == (cpus.asking == cpus.answering ? 100 : 0))
  }

  @Test(arguments: [EndCPUs(asking: 0, answering: 1), EndCPUs(asking: 1, answering: 1)])
  func sessionIOThreadsRunWhereTheyArePinned(cpus: EndCPUs) async throws {
    let runner = BenchRunner(quick: true, only: [], progress: { _ in })
    let trips = try await runner.roundTrips(200, onSessionExecutor: true, cpus: cpus)
    #expect(trips.count == 200)
    #expect(BenchRunner.shareOnOneCPU(trips) == (cpus.asking == cpus.answering ? 100 : 0))
  }
}
