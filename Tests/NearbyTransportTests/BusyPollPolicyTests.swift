import NearbyTransport
import Testing

@Suite("Adaptive busy polling: when a loop polls instead of sleeping")
struct BusyPollPolicyTests {
  let window = Duration.microseconds(200)

  @Test func aLoopThatHasNotWaitedYetSleeps() {
    #expect(!BusyPollPolicy(window: window).pollsAfterActivity)
  }

  @Test("a loop polls once its events come within the window", arguments: [1, 50, 199, 200])
  func shortWaitsMakeItPoll(microseconds: UInt64) {
    var policy = BusyPollPolicy(window: window)
    policy.noteWait(nanoseconds: microseconds * 1000)
    #expect(policy.pollsAfterActivity)
  }

  @Test("a loop whose events come later than the window sleeps", arguments: [201, 1000, 2_000_000])
  func longWaitsMakeItSleep(microseconds: UInt64) {
    var policy = BusyPollPolicy(window: window)
    policy.noteWait(nanoseconds: microseconds * 1000)
    #expect(!policy.pollsAfterActivity)
  }

  /// A conversation that pauses: a few long waits stop the polling (one alone does not), and
  /// a few short ones start it again.
  @Test func theAverageFollowsTheLastFewWaits() {
    var policy = BusyPollPolicy(window: window)
    for _ in 0..<20 { policy.noteWait(nanoseconds: 20_000) }
    #expect(policy.pollsAfterActivity)
    policy.noteWait(nanoseconds: 500_000)
    #expect(policy.pollsAfterActivity, "one long wait (a pause of the conversation) is not enough to stop")
    var longWaits = 1
    while policy.pollsAfterActivity {
      policy.noteWait(nanoseconds: 1_000_000_000)
      longWaits += 1
    }
    #expect(longWaits <= 3, "a person's pace (a second between messages) stops polling after \(longWaits) waits")
    var shortWaits = 0
    while !policy.pollsAfterActivity {
      policy.noteWait(nanoseconds: 20_000)
      shortWaits += 1
      if shortWaits > 100 { break }
    }
    #expect(shortWaits <= 60, "polling starts again after \(shortWaits) short waits")
  }

  @Test func aWindowOfZeroNeverPolls() {
    var policy = BusyPollPolicy(window: .zero)
    for _ in 0..<10 { policy.noteWait(nanoseconds: 0) }
    #expect(!policy.pollsAfterActivity)
  }
}
