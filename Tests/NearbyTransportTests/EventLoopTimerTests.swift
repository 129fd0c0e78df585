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
        // "waiting" is due at 300 ms; "first", due at 50 ms, schedules "late" at 50 + 2000 ms.
        loop.schedule(after: .milliseconds(300)) { record("waiting") }
        loop.schedule(after: .milliseconds(50)) {
          record("first")
          loop.schedule(after: .seconds(2)) {
            record("late")
            done.resume()
          }
        }
      }
    }
    await loop.shutdown()
    let events = log.events
    #expect(events.map(\.0) == ["first", "waiting", "late"])
    let waiting = try #require(events.first { $0.0 == "waiting" }?.1)
    // Without the earliest deadline armed, "waiting" fired with "late", after two seconds.
    #expect(waiting < .seconds(1), "the waiting timer fired after \(waiting)")
  }
}

/// When each timer fired, from the log's creation.
final class FiringLog: Sendable {
  private let start = ContinuousClock.now
  private let fired = Mutex<[(String, Duration)]>([])
  @Sendable func record(_ name: String) { fired.withLock { $0.append((name, ContinuousClock.now - start)) } }
  var events: [(String, Duration)] { fired.withLock { $0 } }
}
