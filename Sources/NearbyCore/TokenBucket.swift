/// A token bucket: at most `burst` at once, refilled at `perSecond`, on the caller's clock.
/// The relay's limits use one each: ROSTER frames a relay may send us, those we send each
/// peer, and reports of a relay's tampering.
package struct TokenBucket: Hashable, Sendable {
  /// Tokens left when last counted (`nil`: never used, so full).
  private var tokens: Double?
  private var refilled: Duration?

  package init() {}

  /// Whether `count` tokens could be taken now (nothing is taken).
  package func canTake(_ count: Double = 1, burst: Double, perSecond: Double, now: Duration) -> Bool {
    available(burst: burst, perSecond: perSecond, now: now) >= count
  }

  /// Whether the bucket has refilled to its burst: it then behaves as a new one.
  package func isFull(burst: Double, perSecond: Double, now: Duration) -> Bool {
    available(burst: burst, perSecond: perSecond, now: now) >= burst
  }

  private func available(burst: Double, perSecond: Double, now: Duration) -> Double {
    let elapsed = refilled.map { now - $0 } ?? .zero
    let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) * 1e-18
    return min(burst, (tokens ?? burst) + max(0, seconds) * perSecond)
  }

  /// Takes `count` tokens of a bucket of `burst` filling at `perSecond`.
  /// - Returns: whether there were enough. If not, nothing is taken, unless `evenIfShort`:
  ///   then the bucket is emptied (never below zero).
  package mutating func take(_ count: Double = 1, burst: Double, perSecond: Double, now: Duration, evenIfShort: Bool = false) -> Bool {
    let available = available(burst: burst, perSecond: perSecond, now: now)
    refilled = now
    let enough = available >= count
    tokens = enough || evenIfShort ? max(0, available - count) : available
    return enough
  }
}
