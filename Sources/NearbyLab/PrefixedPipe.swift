import NearbyScript
import NearbySystem
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

  /// Writes every line of `fd` to `writer` as `prefix + line`, then shows it to `observe`.
  static func forward(fd: Int32, prefix: String, to writer: OutputWriter, observe: @escaping @Sendable (String) -> Void = { _ in }) -> PrefixedPipe {
    let pipe = PrefixedPipe()
    pipe.start(fd: fd) { line in
      writer.line(prefix + line)
      observe(line)
    }
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
    LineReader.read(fd: fd, maximumLineBytes: 65536, closeAtEnd: true, line: line) { [self] in finished.store(true, ordering: .releasing) }
  }
}
