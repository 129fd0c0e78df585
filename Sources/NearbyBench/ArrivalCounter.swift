#if canImport(Glibc)
  import Glibc
#endif

/// Counts arrivals across tasks and lets one waiter know when all have arrived.
final class ArrivalCounter: @unchecked Sendable {
  private var lock = pthread_mutex_t()
  private var remaining = 0
  private var waiter: CheckedContinuation<Void, Never>?

  init() { pthread_mutex_init(&lock, nil) }

  func reset(expecting count: Int) {
    pthread_mutex_lock(&lock)
    remaining = count
    pthread_mutex_unlock(&lock)
  }

  func arrived() {
    pthread_mutex_lock(&lock)
    remaining -= 1
    var resume: CheckedContinuation<Void, Never>?
    if remaining == 0 {
      resume = waiter
      waiter = nil
    }
    pthread_mutex_unlock(&lock)
    resume?.resume()
  }

  func waitForAll() async {
    await withCheckedContinuation { continuation in
      pthread_mutex_lock(&lock)
      if remaining <= 0 {
        pthread_mutex_unlock(&lock)
        continuation.resume()
      } else {
        waiter = continuation
        pthread_mutex_unlock(&lock)
      }
    }
  }
}
