import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// Writes whole lines to a file descriptor with `write(2)`, one call per line where
/// possible, so a script reading a pipe sees each event as it happens. Thread-safe: lines
/// from several tasks never interleave.
public final class OutputWriter: Sendable {
  public let fd: Int32
  private let lock = Mutex(())

  public init(fd: Int32) { self.fd = fd }

  public static let standardOutput = OutputWriter(fd: 1)
  public static let standardError = OutputWriter(fd: 2)

  /// Writes `text` followed by a newline.
  public func line(_ text: String) { write(text + "\n") }

  /// Writes `text` as is.
  public func write(_ text: String) {
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
