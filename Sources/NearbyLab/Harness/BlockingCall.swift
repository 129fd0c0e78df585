#if canImport(Glibc)
  import Glibc
#endif

/// Runs a call that may block (a fork and wait, a join of a helper thread, a sleep that must
/// not be cut short) on a thread of its own, so that it never holds a thread of Swift's
/// cooperative pool.
enum BlockingCall {
  /// Runs `body` on a new thread and returns its result (a status or an errno).
  @discardableResult
  static func run(_ body: @escaping @Sendable () -> Int32) async -> Int32 {
    await withCheckedContinuation { continuation in
      let box = Unmanaged.passRetained(CallBox(body: body, continuation: continuation))
      var thread = pthread_t()
      let created = pthread_create(
        &thread, nil,
        { context in
          Unmanaged<CallBox>.fromOpaque(context!).takeRetainedValue().run()
          return nil
        }, box.toOpaque())
      if created == 0 {
        pthread_detach(thread)
      } else {
        // No thread: run it here rather than not at all.
        box.takeRetainedValue().run()
      }
    }
  }
}

private final class CallBox: Sendable {
  let body: @Sendable () -> Int32
  let continuation: CheckedContinuation<Int32, Never>
  init(body: @escaping @Sendable () -> Int32, continuation: CheckedContinuation<Int32, Never>) {
    self.body = body
    self.continuation = continuation
  }

  func run() { continuation.resume(returning: body()) }
}
