import Foundation
import NearbyChat
import NearbySystem
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// Lines read off a descriptor on a thread of their own: carriage returns, a last line
/// without a newline, and lines longer than the reader takes.
@Suite struct LineReaderTests {
  /// Writes `text` into a pipe (from a thread: it may be more than the pipe holds) and
  /// returns the read end.
  static func pipe(with text: String) throws -> Int32 {
    var fds: [Int32] = [0, 0]
    try #require(Glibc.pipe(&fds) == 0)
    let writeEnd = fds[1]
    let bytes = Array(text.utf8)
    let thread = Thread {
      var offset = 0
      while offset < bytes.count {
        let written = bytes[offset...].withUnsafeBytes { write(writeEnd, $0.baseAddress, $0.count) }
        guard written > 0 else { break }
        offset += written
      }
      close(writeEnd)
    }
    thread.start()
    return fds[0]
  }

  static let limit = 10

  static let input =
    "short\n" + String(repeating: "a", count: 10) + "\n" + String(repeating: "b", count: 11) + "\n"
    + String(repeating: "c", count: 10) + "\r\n" + String(repeating: "d", count: 30) + "\r\n" + "e\r\n\n" + "tail"

  @Test func checkedLinesRefuseWhatIsTooLongAndKeepTheRest() async throws {
    let fd = try Self.pipe(with: Self.input)
    defer { close(fd) }
    var read: [Result<String, LineReader.LineTooLong>] = []
    for await line in LineReader.checkedLines(fd: fd, maximumLineBytes: Self.limit) { read.append(line) }
    let tooLong = { (count: Int) -> Result<String, LineReader.LineTooLong> in .failure(LineReader.LineTooLong(byteCount: count, limit: Self.limit)) }
    #expect(
      read == [
        .success("short"), .success(String(repeating: "a", count: 10)), tooLong(11), .success(String(repeating: "c", count: 10)), tooLong(30),
        .success("e"), .success(""), .success("tail"),
      ])
    #expect(ChatInput(tooLong(30)) == .tooLong(byteCount: 30, limit: Self.limit))
  }

  /// Without a check, a long line is cut to the limit (output of child processes, say).
  @Test func plainLinesAreCutToTheLimit() async throws {
    let fd = try Self.pipe(with: Self.input)
    defer { close(fd) }
    var read: [String] = []
    for await line in LineReader.lines(fd: fd, maximumLineBytes: Self.limit) { read.append(line) }
    #expect(
      read == [
        "short", String(repeating: "a", count: 10), String(repeating: "b", count: 10), String(repeating: "c", count: 10),
        String(repeating: "d", count: 10), "e", "", "tail",
      ])
  }
}
