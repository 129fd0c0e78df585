/// When an event loop polls instead of sleeping (adaptive busy polling): after activity, only
/// while its recent events came soon after it began to wait, within the polling window (a
/// conversation of requests and answers). A loop that waits long for its next event (a chat
/// between people, one peer among many that a sender serves in turn) sleeps at once, so
/// polling costs CPU time only where it saves wake-ups. No clock, no I/O: the loop measures
/// its waits and asks.
package struct BusyPollPolicy: Hashable, Sendable {
  /// The longest poll, in nanoseconds (0: never poll).
  package let window: UInt64
  /// How long the loop recently waited for its next event: a moving average in nanoseconds
  /// (`nil` before the first wait).
  package private(set) var waitEstimate: UInt64?

  package init(window: Duration) {
    self.window = UInt64(max(0, window / .nanoseconds(1)))
  }

  /// One wait, from the moment the loop had nothing to do until its next event (polling or
  /// not): a quarter of the average, so that a few long waits stop the polling and a few
  /// short ones start it again.
  package mutating func noteWait(nanoseconds: UInt64) {
    guard let estimate = waitEstimate else {
      waitEstimate = nanoseconds
      return
    }
    waitEstimate = estimate - estimate / 4 + nanoseconds / 4
  }

  /// Whether to poll (for up to ``window``) after this activity.
  package var pollsAfterActivity: Bool {
    guard window > 0, let waitEstimate else { return false }
    return waitEstimate <= window
  }
}
