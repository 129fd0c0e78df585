import CNearbySystem

#if canImport(Glibc)
  import Glibc
#endif

/// Delivers SIGINT, SIGTERM, SIGHUP and SIGWINCH as an `AsyncStream`: a handler writes
/// each signal to a pipe, which a thread of its own reads.
///
/// Not a signalfd: that needs the signals blocked in every thread, and libdispatch parks the
/// main thread of an async `main` in `sigsuspend` with an empty mask, so a SIGTERM would
/// take its default action there (the process would die without saying goodbye).
/// ``install()`` runs once, at the start of `main`. Signals ignored when the process starts
/// (SIGINT in a shell's background job) stay ignored. Children started with
/// `ChildProcess` get every signal back at its default.
public final class SignalWatcher: Sendable {
  public let signals: AsyncStream<Int32>
  private let fd: Int32

  private init(signals: AsyncStream<Int32>, fd: Int32) {
    self.signals = signals
    self.fd = fd
  }

  /// Installs the handlers and starts the reader. - Returns: nil if that fails.
  public static func install(_ list: [Int32] = [SIGINT, SIGTERM, SIGHUP, SIGWINCH]) -> SignalWatcher? {
    let fd = (list + [0]).withUnsafeBufferPointer { nearby_signal_pipe($0.baseAddress) }
    guard fd >= 0 else { return nil }
    let (stream, continuation) = AsyncStream.makeStream(of: Int32.self)
    let box = Unmanaged.passRetained(SignalBox(fd: fd, continuation: continuation))
    var thread = pthread_t()
    guard
      pthread_create(
        &thread, nil,
        { context in
          let box = Unmanaged<SignalBox>.fromOpaque(context!).takeRetainedValue()
          while true {
            let signal = nearby_signal_pipe_read(box.fd)
            if signal < 0 { break }
            box.continuation.yield(signal)
          }
          box.continuation.finish()
          return nil
        }, box.toOpaque()) == 0
    else {
      box.release()
      return nil
    }
    pthread_detach(thread)
    return SignalWatcher(signals: stream, fd: fd)
  }
}

private final class SignalBox: @unchecked Sendable {
  let fd: Int32
  let continuation: AsyncStream<Int32>.Continuation
  init(fd: Int32, continuation: AsyncStream<Int32>.Continuation) {
    self.fd = fd
    self.continuation = continuation
  }
}
