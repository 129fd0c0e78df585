#if canImport(Glibc)
  import Glibc
#endif

/// Reads lines from a file descriptor on a thread of its own (a blocking `read` never runs
/// on the cooperative pool) and yields them; the stream finishes at end of input.
public enum LineReader {
  /// - Parameter maximumLineBytes: longer lines are cut (a runaway input cannot eat memory).
  public static func lines(fd: Int32 = 0, maximumLineBytes: Int = 1 << 20) -> AsyncStream<String> {
    let (stream, continuation) = AsyncStream.makeStream(of: String.self)
    let box = Unmanaged.passRetained(ReaderBox(fd: fd, limit: maximumLineBytes, continuation: continuation))
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
      continuation.finish()
    }
    return stream
  }
}

private final class ReaderBox: @unchecked Sendable {
  let fd: Int32
  let limit: Int
  let continuation: AsyncStream<String>.Continuation

  init(fd: Int32, limit: Int, continuation: AsyncStream<String>.Continuation) {
    self.fd = fd
    self.limit = limit
    self.continuation = continuation
  }

  func run() {
    var pending: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 4096)
    while true {
      let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
      if count < 0 && errno == EINTR { continue }
      if count <= 0 { break }
      for byte in buffer[0..<count] {
        if byte == UInt8(ascii: "\n") {
          if pending.last == UInt8(ascii: "\r") { pending.removeLast() }
          continuation.yield(String(decoding: pending, as: UTF8.self))
          pending.removeAll(keepingCapacity: true)
        } else if pending.count < limit {
          pending.append(byte)
        }
      }
    }
    if !pending.isEmpty { continuation.yield(String(decoding: pending, as: UTF8.self)) }
    continuation.finish()
  }
}
