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

  /// A line longer than a reader takes: how long it was (its bytes were dropped).
  public struct LineTooLong: Error, Hashable, Sendable {
    public let byteCount: Int
    public let limit: Int
    public init(byteCount: Int, limit: Int) {
      self.byteCount = byteCount
      self.limit = limit
    }
  }

  /// Yields the lines of `fd`, and for each line longer than `maximumLineBytes` a
  /// ``LineTooLong`` instead of a part of it (for input that must be taken whole or not at
  /// all: a chat message cut short and sent would look delivered).
  public static func checkedLines(fd: Int32 = 0, maximumLineBytes: Int = 1 << 20) -> AsyncStream<Result<String, LineTooLong>> {
    let (stream, continuation) = AsyncStream.makeStream(of: Result<String, LineTooLong>.self)
    read(
      fd: fd, maximumLineBytes: maximumLineBytes, closeAtEnd: false, line: { continuation.yield(.success($0)) },
      tooLong: { continuation.yield(.failure(LineTooLong(byteCount: $0, limit: maximumLineBytes))) }, end: { continuation.finish() })
    return stream
  }

  /// Calls `line` with each line of `fd`, in order, on the reading thread, then `end` once.
  /// (For a sink that must see the lines in order without a hop through a task.)
  /// - Parameter tooLong: called with the length of each line longer than
  ///   `maximumLineBytes`, in its place; without it such a line is cut to the limit.
  public static func read(
    fd: Int32, maximumLineBytes: Int = 1 << 20, closeAtEnd: Bool, line: @escaping @Sendable (String) -> Void,
    tooLong: (@Sendable (Int) -> Void)? = nil, end: @escaping @Sendable () -> Void
  ) {
    let box = Unmanaged.passRetained(
      ReaderBox(fd: fd, limit: maximumLineBytes, closeAtEnd: closeAtEnd, line: line, tooLong: tooLong, end: end))
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
  let tooLong: (@Sendable (Int) -> Void)?
  let end: @Sendable () -> Void

  init(
    fd: Int32, limit: Int, closeAtEnd: Bool, line: @escaping @Sendable (String) -> Void, tooLong: (@Sendable (Int) -> Void)?,
    end: @escaping @Sendable () -> Void
  ) {
    self.fd = fd
    self.limit = limit
    self.closeAtEnd = closeAtEnd
    self.line = line
    self.tooLong = tooLong
    self.end = end
  }

  func run() {
    var pending: [UInt8] = []
    // The bytes of the current line, kept or not, and its last one.
    var length = 0
    var last: UInt8 = 0
    var buffer = [UInt8](repeating: 0, count: 4096)
    func finishLine() {
      var count = length
      if last == UInt8(ascii: "\r") {
        count -= 1  // a carriage return before the newline is not part of the line
        if pending.count == length { pending.removeLast() }
      }
      if count <= limit {
        line(String(decoding: pending, as: UTF8.self))
      } else if let tooLong {
        tooLong(count)
      } else {
        line(String(decoding: pending.prefix(limit), as: UTF8.self))
      }
      pending.removeAll(keepingCapacity: pending.capacity <= 1 << 16)
      length = 0
      last = 0
    }
    while true {
      let count = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
      if count < 0 && errno == EINTR { continue }
      if count <= 0 { break }
      for byte in buffer[0..<count] {
        if byte == UInt8(ascii: "\n") {
          finishLine()
        } else {
          length += 1
          last = byte
          // One past the limit is kept: a carriage return may follow a line of the limit.
          if pending.count <= limit { pending.append(byte) }
        }
      }
    }
    if length > 0 { finishLine() }
    if closeAtEnd { close(fd) }
    end()
  }
}
