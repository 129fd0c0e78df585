#if canImport(Glibc)
  import Glibc
#endif

/// Reads lines from a file descriptor on a thread of its own (a blocking `read` never runs
/// on the cooperative pool). A trailing carriage return is dropped; a last line without a
/// newline still counts.
public enum LineReader {
  /// Yields the lines of `fd`; the stream finishes at end of input.
  /// - Parameters:
  ///   - maximumLineBytes: longer lines are cut (a runaway input cannot eat memory).
  ///   - closeAtEnd: close `fd` at end of input (a pipe's read end; not standard input).
  public static func lines(fd: Int32 = 0, maximumLineBytes: Int = 1 << 20, closeAtEnd: Bool = false) -> AsyncStream<String> {
    let (stream, continuation) = AsyncStream.makeStream(of: String.self)
    read(fd: fd, maximumLineBytes: maximumLineBytes, closeAtEnd: closeAtEnd, line: { continuation.yield($0) }, end: { continuation.finish() })
    return stream
  }

  /// Calls `line` with each line of `fd`, in order, on the reading thread, then `end` once.
  /// (For a sink that must see the lines in order without a hop through a task.)
  public static func read(
    fd: Int32, maximumLineBytes: Int = 1 << 20, closeAtEnd: Bool, line: @escaping @Sendable (String) -> Void, end: @escaping @Sendable () -> Void
  ) {
    let box = Unmanaged.passRetained(ReaderBox(fd: fd, limit: maximumLineBytes, closeAtEnd: closeAtEnd, line: line, end: end))
    var thread = pthread_t()
    let created = pthread_create(
      &thread, nil,
      { context in
        let box = Unmanaged<ReaderBox>.fromOpaque(context!).takeRetainedValue()
        box.run()
        return nil
      }, box.toOpaque())
    if created == 0 {
      pthread_detach(thread)
    } else {
      box.release()
      if closeAtEnd { close(fd) }
      end()
    }
  }
}

private final class ReaderBox: Sendable {
  let fd: Int32
  let limit: Int
  let closeAtEnd: Bool
  let line: @Sendable (String) -> Void
  let end: @Sendable () -> Void

  init(fd: Int32, limit: Int, closeAtEnd: Bool, line: @escaping @Sendable (String) -> Void, end: @escaping @Sendable () -> Void) {
    self.fd = fd
    self.limit = limit
    self.closeAtEnd = closeAtEnd
    self.line = line
    self.end = end
  }

  func run() {
    var pending: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 4096)
    while true {
      let count = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
      if count < 0 && errno == EINTR { continue }
      if count <= 0 { break }
      for byte in buffer[0..<count] {
        if byte == UInt8(ascii: "\n") {
          if pending.last == UInt8(ascii: "\r") { pending.removeLast() }
          line(String(decoding: pending, as: UTF8.self))
          pending.removeAll(keepingCapacity: true)
        } else if pending.count < limit {
          pending.append(byte)
        }
      }
    }
    if !pending.isEmpty { line(String(decoding: pending, as: UTF8.self)) }
    if closeAtEnd { close(fd) }
    end()
  }
}
