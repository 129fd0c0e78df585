import NearbySystem

/// Runs a call that may block (a fork and wait, a join of a helper thread, a sleep that must
/// not be cut short) on a thread of its own, so that it never holds a thread of Swift's
/// cooperative pool.
enum BlockingCall {
  /// Runs `body` on a new thread and returns its result (a status or an errno).
  @discardableResult
  static func run(_ body: @escaping @Sendable () -> Int32) async -> Int32 {
    await withCheckedContinuation { continuation in
      // Without a thread to be had, it runs here rather than not at all.
      DetachedThread.run { continuation.resume(returning: body()) }
    }
  }
}
