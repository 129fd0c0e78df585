import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// Bytes on their way to a file descriptor that may block (a pipe nobody reads, a stalled
/// terminal): a thread of its own writes them, so no caller ever blocks in `write(2)` (and
/// none blocks Swift's cooperative pool), and the queue is bounded: producers ask for room
/// with ``waitForRoom()`` before they make more output, which holds them up — and, in the
/// chat, holds up taking messages from the session, so TCP slows the senders down.
final class OutputQueue: Sendable {
  private struct State {
    var pending: [UInt8] = []
    /// Bytes appended and not yet written (pending, and what the thread is writing).
    var queuedBytes = 0
    var roomWaiters: [(UInt64, CheckedContinuation<Void, Never>)] = []
    var nextToken: UInt64 = 0
    /// The thread waits for bytes.
    var writerIdle = false
    /// The descriptor failed (EPIPE and friends): what comes is dropped.
    var broken = false
    var threadStarted = false
    /// Bytes written so far (progress, for ``drain(stallLimit:)``).
    var written = 0
  }

  let fd: Int32
  /// Producers wait once this many bytes are queued; they go on when it is half empty.
  let limit: Int
  private let state = Mutex(State())
  private let signal = WriterSignal()

  init(fd: Int32, limit: Int) {
    // A reader that goes away makes write(2) fail with EPIPE, not kill the process.
    _ = ignoreSIGPIPE
    self.fd = fd
    self.limit = max(1, limit)
  }

  /// Queues `bytes` (never blocks; a producer that asked for room gets it for one more line
  /// at least, so the queue holds at most the limit and one line).
  func append(_ bytes: [UInt8]) {
    guard !bytes.isEmpty else { return }
    let (start, wakeWriter) = state.withLock { state -> (Bool, Bool) in
      if state.broken { return (false, false) }
      state.pending.append(contentsOf: bytes)
      state.queuedBytes += bytes.count
      let start = !state.threadStarted
      state.threadStarted = true
      let wakeWriter = state.writerIdle
      state.writerIdle = false
      return (start, wakeWriter)
    }
    if start { startThread() } else if wakeWriter { signal.post() }
  }

  /// Returns once fewer than ``limit`` bytes are queued (at once when they are), or when the
  /// calling task is cancelled.
  func waitForRoom() async {
    let token = state.withLock { state -> UInt64 in
      state.nextToken += 1
      return state.nextToken
    }
    await withTaskCancellationHandler {
      await withCheckedContinuation { continuation in
        let ready = state.withLock { state -> Bool in
          if state.broken || state.queuedBytes < limit || Task.isCancelled { return true }
          state.roomWaiters.append((token, continuation))
          return false
        }
        if ready { continuation.resume() }
      }
    } onCancel: {
      let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
        guard let index = state.roomWaiters.firstIndex(where: { $0.0 == token }) else { return nil }
        return state.roomWaiters.remove(at: index).1
      }
      waiter?.resume()
    }
  }

  /// Waits until everything queued is written, giving up when the descriptor takes nothing
  /// for `stallLimit` (its reader is gone or asleep: the process must still be able to end).
  func drain(stallLimit: Duration) async {
    var last = -1
    var stalledSince = ContinuousClock.now
    while true {
      let (empty, written) = state.withLock { ($0.queuedBytes == 0 || $0.broken, $0.written) }
      if empty { return }
      if written != last {
        last = written
        stalledSince = ContinuousClock.now
      } else if ContinuousClock.now - stalledSince >= stallLimit {
        return
      }
      try? await Task.sleep(for: .milliseconds(10))
    }
  }

  /// Bytes queued and not yet written.
  var queuedBytes: Int { state.withLock { $0.queuedBytes } }

  private func startThread() {
    let box = Unmanaged.passRetained(self)
    var thread = pthread_t()
    let created = pthread_create(
      &thread, nil,
      { context in
        Unmanaged<OutputQueue>.fromOpaque(context!).takeRetainedValue().run()
        return nil
      }, box.toOpaque())
    if created == 0 {
      pthread_detach(thread)
    } else {
      box.release()
      // No thread: write on the caller's (as an unqueued writer would).
      run(once: true)
    }
  }

  /// The writer thread: takes what is pending, writes it (blocking), and wakes producers
  /// once the queue is half empty; sleeps while nothing is pending.
  private func run(once: Bool = false) {
    var chunk: [UInt8] = []
    while true {
      let next = state.withLock { state -> Bool in
        if state.pending.isEmpty {
          state.writerIdle = true
          return false
        }
        swap(&state.pending, &chunk)
        return true
      }
      if !next {
        if once { return }
        signal.wait()
        continue
      }
      var offset = 0
      var failed = false
      while offset < chunk.count {
        let count = chunk.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + offset, $0.count - offset) }
        if count < 0 {
          if errno == EINTR { continue }
          failed = true  // EPIPE and friends: the reader is gone; nothing useful to do.
          break
        }
        offset += count
        wrote(count)
      }
      if failed { fail() }
      chunk.removeAll(keepingCapacity: chunk.capacity <= 1 << 20)
    }
  }

  private func wrote(_ count: Int) {
    let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
      state.queuedBytes -= count
      state.written += count
      guard state.queuedBytes <= limit / 2, !state.roomWaiters.isEmpty else { return [] }
      defer { state.roomWaiters.removeAll() }
      return state.roomWaiters.map(\.1)
    }
    for waiter in waiters { waiter.resume() }
  }

  private func fail() {
    let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
      state.broken = true
      state.pending = []
      state.queuedBytes = 0
      defer { state.roomWaiters.removeAll() }
      return state.roomWaiters.map(\.1)
    }
    for waiter in waiters { waiter.resume() }
  }
}

/// A counting semaphore for the writer thread (`sem_t`).
private final class WriterSignal: @unchecked Sendable {
  private let semaphore = UnsafeMutablePointer<sem_t>.allocate(capacity: 1)
  init() { sem_init(semaphore, 0, 0) }
  deinit {
    sem_destroy(semaphore)
    semaphore.deallocate()
  }
  func post() { sem_post(semaphore) }
  func wait() {
    while sem_wait(semaphore) != 0 && errno == EINTR {}
  }
}
