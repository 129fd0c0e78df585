import NearbyBench
import NearbyTestSupport
import Testing

/// A real `nearby chat --plain` (or `--json`) flooded with 1 MiB messages by one peer, its output going to
/// /dev/null or to a pipe nobody reads (``ChatFlood``): its memory stays bounded, another
/// peer's message still gets through, and nothing is reported delivered that the chat did
/// not take. CI runs 6-second floods; `nearby bench --only hostile` measures 30-second ones.
///
/// One flood at a time: each keeps both CPUs busy for its seconds, and three at once starved
/// the rest of a parallel test run.
@Suite("A flooded chat (nearby process, real Avahi)", .enabled(if: LAN.avahiAvailable, "needs scripts/lan loopback"), .serialized)
struct ChatFloodTests {
  static let seconds = 6.0

  /// In lines for people and in JSON events (whose writer had its own per-character cost).
  @Test(arguments: [false, true])
  func aChatWritingToDevNullStaysSmallAndStillHearsOthers(json: Bool) async throws {
    let report = try await ChatFlood(executable: Repository.nearby, output: .devNull, json: json, seconds: Self.seconds).run()
    print("flood: \(report)")
    #expect(report.rssGrowth < 64 << 20, "the chat grew by \(report.rssGrowth >> 20) MiB")
    #expect(report.delivered > 0, "nothing got through")
    #expect(report.failed == 0, "sends wait for room rather than fail")
    let latency = try #require(report.carolLatency, "carol's message was not delivered during the flood")
    // Through while the flood goes on (it took 24 ms in a benchmark run, and up to 2.9 s in
    // full parallel test runs of this machine).
    #expect(report.carolDeliveredDuringFlood, "carol's message took \(latency), past the flood's end")
  }

  @Test func aChatWritingToAPipeNobodyReadsTakesOnlyWhatItCanShow() async throws {
    let report = try await ChatFlood(executable: Repository.nearby, output: .unreadPipe, seconds: Self.seconds).run()
    print("flood: \(report)")
    #expect(report.rssGrowth < 64 << 20, "the chat grew by \(report.rssGrowth >> 20) MiB")
    // What the chat took fits in its output queue (1 MiB and a line) and the pipe (64 KiB):
    // a few messages. The flooder's sends waited for room meanwhile.
    #expect(report.delivered <= 4, "\(report.delivered) messages were reported delivered")
    #expect(report.sent <= report.delivered + 64, "the flooder's sends did not wait: \(report.sent) sent")
    // Once the pipe is read, carol's message is shown and delivered (it may have been taken
    // before, if the output had room), and everything reported delivered had been shown.
    #expect(report.carolShown)
    #expect(report.carolLatency != nil, "carol's message was never delivered")
    #expect(report.deliveredNotShown.isEmpty, "delivered but never shown: \(report.deliveredNotShown.sorted())")
  }
}
