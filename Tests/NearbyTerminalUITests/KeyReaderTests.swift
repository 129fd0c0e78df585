import NearbyTerminalUI
import Synchronization
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// The thread that reads the terminal's keys.
@Suite struct KeyReaderTests {
  final class Flag: Sendable {
    let value = Atomic<Bool>(false)
    var isSet: Bool { value.load(ordering: .relaxed) }
    func set() { value.store(true, ordering: .relaxed) }
  }

  /// The terminal went away (the reading thread ended), then the chat stops the reader: that
  /// writes nothing into a file opened meanwhile. (The thread closed its wake-up descriptor on
  /// its way out, and the stop wrote 8 bytes to whatever had its number next: a file opened
  /// now gets the lowest free number.)
  @Test func stoppingAfterTheTerminalEndedWritesIntoNoOtherFile() async throws {
    var terminal: [Int32] = [0, 0]
    try #require(pipe(&terminal) == 0)
    defer { close(terminal[0]) }
    let ended = Flag()
    let started = KeyReader.start(fd: terminal[0], onBytes: { _ in false }, onTimeout: {}, onEnd: { ended.set() })
    let reader = try #require(started)
    close(terminal[1])
    for _ in 0..<200 where !ended.isSet { try await Task.sleep(for: .milliseconds(10)) }
    try #require(ended.isSet, "the reader did not see the end of its input")
    try await Task.sleep(for: .milliseconds(50))  // the thread's way out
    var template = Array("/tmp/nearby-keys-XXXXXX".utf8CString)
    let directory = template.withUnsafeMutableBufferPointer { String(cString: mkdtemp($0.baseAddress!)) }
    let files = (0..<4).map { open("\(directory)/f\($0)", O_CREAT | O_RDWR | O_TRUNC | O_CLOEXEC, 0o600) }
    defer {
      for (index, fd) in files.enumerated() {
        close(fd)
        unlink("\(directory)/f\(index)")
      }
      rmdir(directory)
    }
    reader.stop()
    for fd in files {
      var status = stat()
      #expect(fstat(fd, &status) == 0 && status.st_size == 0, "file descriptor \(fd) got \(status.st_size) bytes")
    }
  }
}
