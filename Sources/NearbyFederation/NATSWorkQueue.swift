import Dispatch

/// A serial queue of its own for libnats calls that wait for a server (connecting, JetStream
/// requests, key-value puts): they never hold a thread of Swift's cooperative pool.
public final class NATSWorkQueue: Sendable {
  let queue: DispatchQueue

  public init(label: String) { queue = DispatchQueue(label: label) }

  /// Runs `body` on the queue and returns what it returned (the continuation is resumed
  /// exactly once, on the queue).
  public func run<T: Sendable>(_ body: @escaping @Sendable () throws(NATSError) -> T) async throws(NATSError) -> T {
    let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<T, NATSError>, Never>) in
      queue.async {
        do throws(NATSError) {
          continuation.resume(returning: .success(try body()))
        } catch {
          continuation.resume(returning: .failure(error))
        }
      }
    }
    return try result.get()
  }

  /// Runs `body` on the queue, later.
  public func async(_ body: @escaping @Sendable () -> Void) { queue.async(execute: body) }

  /// Runs `body` on the queue after `delay`.
  public func after(_ delay: Duration, _ body: @escaping @Sendable () -> Void) {
    queue.asyncAfter(deadline: .now() + .nanoseconds(Int(delay.nanoseconds)), execute: body)
  }
}
