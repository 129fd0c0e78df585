#if canImport(Glibc)
  import Glibc
#endif

/// Runs blocking work on a thread of its own (never on Swift's cooperative pool), without
/// Foundation's `Thread`.
public enum DetachedThread {
  /// Starts `body` on a new detached thread. If no thread can be made, `body` runs on the
  /// caller's thread (it still runs exactly once).
  public static func run(_ body: @escaping @Sendable () -> Void) {
    final class Box: Sendable {
      let body: @Sendable () -> Void
      init(_ body: @escaping @Sendable () -> Void) { self.body = body }
    }
    let box = Unmanaged.passRetained(Box(body))
    var thread = pthread_t()
    let created = pthread_create(
      &thread, nil,
      { context in
        Unmanaged<Box>.fromOpaque(context!).takeRetainedValue().body()
        return nil
      }, box.toOpaque())
    if created == 0 {
      pthread_detach(thread)
    } else {
      box.takeRetainedValue().body()
    }
  }
}
