import Synchronization

/// A one-shot signal that can be opened from any context (a cancellation handler too) and
/// awaited once; the continuation is resumed exactly once.
package final class Gate: Sendable {
  private let state = Mutex<(open: Bool, waiter: CheckedContinuation<Void, Never>?)>((false, nil))

  package init() {}

  package func open() {
    let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
      state.open = true
      defer { state.waiter = nil }
      return state.waiter
    }
    waiter?.resume()
  }

  package func wait() async {
    await withCheckedContinuation { continuation in
      let resumeNow = state.withLock { state -> Bool in
        if state.open { return true }
        state.waiter = continuation
        return false
      }
      if resumeNow { continuation.resume() }
    }
  }
}
