import NearbyCore
import Testing

/// The token bucket behind the relay's limits: full at first, refilled with time, never
/// above its burst, and emptied (not overdrawn) when taken anyway.
@Suite("Token bucket")
struct TokenBucketTests {
  @Test func aBurstThenTheRate() {
    var bucket = TokenBucket()
    func take(at now: Duration) -> Bool { bucket.take(burst: 4, perSecond: 2, now: now) }
    let start = Duration.seconds(100)
    let burst = (0..<4).map { _ in take(at: start) }
    #expect(burst == [true, true, true, true])
    #expect(take(at: start) == false)
    #expect(take(at: start + .milliseconds(500)) == true)
    #expect(take(at: start + .milliseconds(500)) == false)
    // A long pause fills it to its burst, no more.
    let later = start + .seconds(60)
    let refilled = (0..<5).map { _ in take(at: later) }
    #expect(refilled == [true, true, true, true, false])
  }

  @Test func takingSeveralAtOnceAndTakingAnyway() {
    var bucket = TokenBucket()
    func take(_ count: Double, at now: Duration, anyway: Bool = false) -> Bool {
      bucket.take(count, burst: 4, perSecond: 1, now: now, evenIfShort: anyway)
    }
    #expect(take(5, at: .zero) == false, "more than the burst")
    #expect(take(3, at: .zero) == true, "nothing was taken by the refusal")
    #expect(take(3, at: .zero, anyway: true) == false, "short, taken anyway")
    #expect(take(1, at: .zero) == false, "emptied")
    #expect(take(1, at: .seconds(1)) == true, "not overdrawn: one second gives one")
  }

  /// Looking does not take; a bucket that refilled to its burst is as good as a new one
  /// (the session drops those when it keeps many).
  @Test func lookingWithoutTakingAndTellingAFullBucket() {
    var bucket = TokenBucket()
    #expect(bucket.isFull(burst: 2, perSecond: 1, now: .zero), "never used")
    #expect(bucket.canTake(burst: 2, perSecond: 1, now: .zero))
    _ = bucket.take(2, burst: 2, perSecond: 1, now: .zero)
    #expect(bucket.canTake(burst: 2, perSecond: 1, now: .zero) == false)
    #expect(bucket.canTake(burst: 2, perSecond: 1, now: .zero) == false, "looking took nothing, and gave nothing")
    #expect(bucket.isFull(burst: 2, perSecond: 1, now: .milliseconds(1999)) == false)
    #expect(bucket.canTake(burst: 2, perSecond: 1, now: .seconds(1)))
    #expect(bucket.isFull(burst: 2, perSecond: 1, now: .seconds(2)))
  }
}
