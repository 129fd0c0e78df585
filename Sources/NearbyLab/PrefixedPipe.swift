import NearbyChat
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// Reads a pipe on a thread of its own (blocking reads never run on the cooperative pool)
/// until end of file, and hands each line to a sink: a host's output, written with the
/// host's name in front, or collected text. The thread closes the descriptor at the end.
final class PrefixedPipe: Sendable {
  private let finished = Atomic<Bool>(false)
  private let collected = Mutex<[String]>([])

  private init() {}

  /// Writes every line of `fd` to `writer` as `prefix + line`.
  static func forward(fd: Int32, prefix: String, to writer: OutputWriter) -> PrefixedPipe {
    let pipe = PrefixedPipe()
    pipe.start(fd: fd) { line in writer.line(prefix + line) }
    return pipe
  }

  /// Collects the text of `fd`; ``text()`` returns it after end of file.
  static func collect(fd: Int32) -> PrefixedPipe {
    let pipe = PrefixedPipe()
    pipe.start(fd: fd) { [pipe] line in pipe.collected.withLock { $0.append(line) } }
    return pipe
  }

  var isFinished: Bool { finished.load(ordering: .acquiring) }

  /// Waits until end of file, or until `deadline` (a process that inherited the pipe may
  /// keep it open). - Returns: whether the end was reached.
  @discardableResult
  func waitUntilFinished(deadline: ContinuousClock.Instant) async -> Bool {
    while !isFinished {
      if ContinuousClock.now >= deadline { return false }
      try? await Task.sleep(for: .milliseconds(10))
    }
    return true
  }

  /// The collected text, once the pipe reached its end (or what came within `limit`).
  func text(limit: Duration = .seconds(5)) async -> String {
    await waitUntilFinished(deadline: .now + limit)
    return collected.withLock { $0.joined(separator: "\n") }
  }

  private func start(fd: Int32, line: @escaping @Sendable (String) -> Void) {
    let box = Unmanaged.passRetained(PipeReaderBox(fd: fd, line: line, done: { [self] in finished.store(true, ordering: .releasing) }))
    var thread = pthread_t()
    let created = pthread_create(
      &thread, nil,
      { context in
        let box = Unmanaged<PipeReaderBox>.fromOpaque(context!).takeRetainedValue()
        box.run()
        return nil
      }, box.toOpaque())
    if created == 0 {
      pthread_detach(thread)
    } else {
      box.release()
      close(fd)
      finished.store(true, ordering: .releasing)
    }
  }
}

private final class PipeReaderBox: @unchecked Sendable {
  let fd: Int32
  let line: @Sendable (String) -> Void
  let done: @Sendable () -> Void

  init(fd: Int32, line: @escaping @Sendable (String) -> Void, done: @escaping @Sendable () -> Void) {
    self.fd = fd
    self.line = line
    self.done = done
  }

  func run() {
    var pending: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 16384)
    while true {
      let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
      if count < 0 && errno == EINTR { continue }
      if count <= 0 { break }
      for byte in buffer[0..<count] {
        if byte == UInt8(ascii: "\n") {
          line(String(decoding: pending, as: UTF8.self))
          pending.removeAll(keepingCapacity: true)
        } else if pending.count < 65536 {
          pending.append(byte)
        }
      }
    }
    if !pending.isEmpty { line(String(decoding: pending, as: UTF8.self)) }
    close(fd)
    done()
  }
}
