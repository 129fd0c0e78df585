import CNearbySystem

#if canImport(Glibc)
  import Glibc
#endif

/// Reads the terminal's bytes on a thread of its own (a blocking read never runs on the
/// cooperative pool) and hands them over as they come.
///
/// When the receiver waits for the rest of an escape sequence, the reader reports a
/// timeout after 50 ms without bytes: then it was the Escape key. ``stop()`` wakes the
/// thread through an eventfd and ends it.
public final class KeyReader: Sendable {
  private let wake: WakeDescriptor

  private init(wake: WakeDescriptor) { self.wake = wake }

  /// Starts reading.
  /// - Parameters:
  ///   - onBytes: called with each chunk; returns whether an escape sequence is incomplete.
  ///   - onTimeout: nothing followed an incomplete sequence for 50 ms.
  ///   - onEnd: the terminal is gone (end of input or a read error).
  /// - Returns: nil if the thread or its eventfd cannot be created.
  public static func start(
    fd: Int32, onBytes: @escaping @Sendable ([UInt8]) -> Bool, onTimeout: @escaping @Sendable () -> Void,
    onEnd: @escaping @Sendable () -> Void
  ) -> KeyReader? {
    let wakeFD = nearby_eventfd()
    guard wakeFD >= 0 else { return nil }
    let wake = WakeDescriptor(wakeFD)
    let box = Unmanaged.passRetained(KeyReaderBox(fd: fd, wake: wake, onBytes: onBytes, onTimeout: onTimeout, onEnd: onEnd))
    var thread = pthread_t()
    let created = pthread_create(
      &thread, nil,
      { context in
        let box = Unmanaged<KeyReaderBox>.fromOpaque(context!).takeRetainedValue()
        _ = nearby_set_thread_name("nearby-keys")
        box.run()
        return nil
      }, box.toOpaque())
    guard created == 0 else {
      box.release()
      return nil
    }
    pthread_detach(thread)
    return KeyReader(wake: wake)
  }

  /// Ends the thread (if the terminal did not end it already).
  public func stop() { _ = nearby_eventfd_signal(wake.fd) }
}

/// The eventfd that wakes the reading thread, closed once both the thread and the
/// ``KeyReader`` let go of it. (The thread closed it on its way out: a ``KeyReader/stop()``
/// after the terminal went away then wrote 8 bytes to whatever file had its number since, a
/// conversation log say.)
private final class WakeDescriptor: Sendable {
  let fd: Int32
  init(_ fd: Int32) { self.fd = fd }
  deinit { close(fd) }
}

private final class KeyReaderBox: @unchecked Sendable {
  let fd: Int32
  let wake: WakeDescriptor
  let onBytes: @Sendable ([UInt8]) -> Bool
  let onTimeout: @Sendable () -> Void
  let onEnd: @Sendable () -> Void

  init(
    fd: Int32, wake: WakeDescriptor, onBytes: @escaping @Sendable ([UInt8]) -> Bool, onTimeout: @escaping @Sendable () -> Void,
    onEnd: @escaping @Sendable () -> Void
  ) {
    self.fd = fd
    self.wake = wake
    self.onBytes = onBytes
    self.onTimeout = onTimeout
    self.onEnd = onEnd
  }

  func run() {
    var waiting = false
    var buffer = [UInt8](repeating: 0, count: 4096)
    while true {
      var fds = [pollfd(fd: fd, events: Int16(POLLIN), revents: 0), pollfd(fd: wake.fd, events: Int16(POLLIN), revents: 0)]
      let ready = poll(&fds, 2, waiting ? 50 : -1)
      if ready < 0 {
        if errno == EINTR { continue }
        onEnd()
        return
      }
      if fds[1].revents != 0 { return }
      if ready == 0 {
        waiting = false
        onTimeout()
        continue
      }
      let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
      if count < 0 && (errno == EINTR || errno == EAGAIN) { continue }
      if count <= 0 {
        onEnd()
        return
      }
      waiting = onBytes(Array(buffer[0..<count]))
    }
  }
}
