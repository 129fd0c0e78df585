import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// Writes whole lines to a file descriptor with `write(2)`, one call per line where
/// possible, so a script reading a pipe sees each event as it happens. Thread-safe: lines
/// from several tasks never interleave.
///
/// By default a write blocks its caller until the descriptor took it. A *queued* writer
/// (``init(fd:queueLimit:)``) never blocks: a thread of its own writes, and producers keep
/// its queue bounded by asking for room (``waitForRoom()``) before they make more output.
public final class OutputWriter: Sendable {
  public let fd: Int32
  private let lock = Mutex(())
  private let queue: OutputQueue?

  public init(fd: Int32) {
    self.fd = fd
    self.queue = nil
  }

  /// A queued writer: lines go to a thread that writes them, so a reader that stops reading
  /// (a pipe nobody reads) blocks nobody.
  /// - Parameter queueLimit: the bytes queued beyond which ``waitForRoom()`` waits.
  public init(fd: Int32, queueLimit: Int) {
    self.fd = fd
    self.queue = OutputQueue(fd: fd, limit: queueLimit)
  }

  /// Returns once the queue has room (at once for an unqueued writer, and when the calling
  /// task is cancelled).
  public func waitForRoom() async { await queue?.waitForRoom() }

  /// Waits until what is queued is written, or until the descriptor took nothing for
  /// `stallLimit` (its reader is gone or asleep).
  public func drain(stallLimit: Duration = .seconds(5)) async { await queue?.drain(stallLimit: stallLimit) }

  /// Bytes queued and not yet written (0 for an unqueued writer).
  public var queuedBytes: Int { queue?.queuedBytes ?? 0 }

  public static let standardOutput = OutputWriter(fd: 1)
  public static let standardError = OutputWriter(fd: 2)

  /// Writes `text` followed by a newline.
  public func line(_ text: String) { write(text + "\n") }

  /// Writes `text` as is.
  public func write(_ text: String) {
    if let queue {
      // Under the lock, so that lines from several tasks are queued whole and in order.
      lock.withLock { _ in queue.append(Array(text.utf8)) }
      return
    }
    lock.withLock { _ in
      var bytes = Array(text.utf8)
      var offset = 0
      while offset < bytes.count {
        let written = bytes.withUnsafeMutableBytes { raw in
          Glibc.write(fd, raw.baseAddress! + offset, raw.count - offset)
        }
        if written < 0 {
          if errno == EINTR { continue }
          return  // EPIPE and friends: the reader is gone; nothing useful to do.
        }
        offset += written
      }
      bytes.removeAll()
    }
  }

  /// Whether the descriptor is a terminal.
  public var isTerminal: Bool { isatty(fd) == 1 }
}
