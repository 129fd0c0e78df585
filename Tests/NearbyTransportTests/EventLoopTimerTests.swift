import NearbyTransport
import Synchronization
import Testing

/// The loop's timers fire at their own deadlines, whatever other timers' work schedules.
@Suite("Event loop timers")
struct EventLoopTimerTests {
  /// A timer already waiting when another one's work schedules a later timer still fires at
  /// its own deadline, not with the later one (the loop arms its descriptor for the earliest).
  @Test func aWaitingTimerFiresBeforeALaterOneScheduledMeanwhile() async throws {
    let loop = try EventLoop()
    let log = FiringLog()
    let record = log.record
    await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
      loop.execute {
        // "waiting" is due at 300 ms; "first", due at 50 ms, schedules "late" at 50 + 5000 ms.
        loop.schedule(after: .milliseconds(300)) { record("waiting") }
        loop.schedule(after: .milliseconds(50)) {
          record("first")
          loop.schedule(after: .seconds(5)) {
            record("late")
            done.resume()
          }
        }
      }
    }
    await loop.shutdown()
    let events = log.events
    #expect(events.map(\.0) == ["first", "waiting", "late"])
    let first = try #require(events.first { $0.0 == "first" }?.1)
    let waiting = try #require(events.first { $0.0 == "waiting" }?.1)
    // Due 250 ms after "first". Without the earliest deadline armed, it fired with "late",
    // five seconds after "first"; the bound leaves room for a busy machine.
    #expect(waiting - first < .milliseconds(2500), "the waiting timer fired \(waiting - first) after the first")
  }
}

/// When each timer fired, from the log's creation.
final class FiringLog: Sendable {
  private let start = ContinuousClock.now
  private let fired = Mutex<[(String, Duration)]>([])
  @Sendable func record(_ name: String) { fired.withLock { $0.append((name, ContinuousClock.now - start)) } }
  var events: [(String, Duration)] { fired.withLock { $0 } }
}
