import CNearbySystem

#if canImport(Glibc)
  import Glibc
#endif

/// Delivers SIGINT, SIGTERM, SIGHUP and SIGWINCH as an `AsyncStream`, through a signalfd
/// read on a thread of its own.
///
/// ``install()`` must run at the very start of `main`, before other threads exist: it blocks
/// these signals in the calling thread, and threads created afterwards inherit the mask, so
/// the signals reach only the signalfd.
public final class SignalWatcher: Sendable {
  public let signals: AsyncStream<Int32>
  private let fd: Int32

  private init(signals: AsyncStream<Int32>, fd: Int32) {
    self.signals = signals
    self.fd = fd
  }

  /// Blocks the signals and starts the reader. - Returns: nil if signalfd is unavailable.
  public static func install(_ list: [Int32] = [SIGINT, SIGTERM, SIGHUP, SIGWINCH]) -> SignalWatcher? {
    let fd = (list + [0]).withUnsafeBufferPointer { nearby_signalfd($0.baseAddress) }
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
            let signal = nearby_signalfd_read(box.fd)
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
