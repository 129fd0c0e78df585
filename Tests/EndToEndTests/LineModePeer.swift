import Foundation
import NearbySystem
import NearbyTestSupport
import NearbyTransport

#if canImport(Glibc)
  import Glibc
#endif

/// The built `nearby` executable: `.build/debug/nearby` of this checkout (scripts/test
/// builds it with `swift build --build-tests`).
enum NearbyBinary {
  static let path: String = {
    var url = URL(fileURLWithPath: #filePath)
    for _ in 0..<3 { url.deleteLastPathComponent() }
    return url.appendingPathComponent(".build/debug/nearby").path
  }()

  static var isBuilt: Bool { FileManager.default.isExecutableFile(atPath: path) }
}

/// A fresh directory for one test, removed at the end.
struct TemporaryDirectory: ~Copyable {
  let path: String

  init() throws {
    path = FileManager.default.temporaryDirectory.appendingPathComponent("nearby-e2e-\(UUID().uuidString)").path
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
  }

  deinit { try? FileManager.default.removeItem(atPath: path) }
}

/// `nearby chat --plain` in a child process: lines go in through a pipe, its output lines
/// are recorded.
final class LineModePeer: Sendable {
  let process: ChildProcess
  let output: Recorder<String>
  private let input: Int32

  init(name: String, service: String, stateDirectory: String, extraArguments: [String] = []) throws {
    var inputPipe: [Int32] = [0, 0]
    var outputPipe: [Int32] = [0, 0]
    // Close-on-exec, so that no other child (a tmux server) keeps the pipes open. (Swift's
    // Glibc has no pipe2; a child spawned by a parallel test in between may inherit them
    // for a moment, which only delays the end of the output.)
    guard pipe(&inputPipe) == 0, pipe(&outputPipe) == 0 else { throw WaitError(description: "pipe failed") }
    for fd in inputPipe + outputPipe { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
    process = try ChildProcess(
      NearbyBinary.path,
      ["chat", "--plain", "--name", name, "--service", service, "--state-dir", stateDirectory] + extraArguments,
      standardInput: .descriptor(inputPipe[0]), standardOutput: .descriptor(outputPipe[1]), standardError: .descriptor(outputPipe[1]))
    close(inputPipe[0])
    close(outputPipe[1])
    input = inputPipe[1]
    output = Recorder(LineReader.lines(fd: outputPipe[0], closeAtEnd: true))
  }

  /// Sends one line to the chat.
  func send(_ line: String) {
    let bytes = Array((line + "\n").utf8)
    _ = bytes.withUnsafeBytes { write(input, $0.baseAddress, $0.count) }
  }

  /// Waits for an output line containing `text`. - Returns: that line.
  @discardableResult
  func waitForLine(containing text: String, within timeout: Duration = .seconds(20)) async throws -> String {
    try await output.next(within: timeout, "line with '\(text)'") { $0.contains(text) ? $0 : nil }
  }

  /// Ends the chat (end of input means /quit) and waits for it.
  func finish() async -> Int32 {
    close(input)
    let watchdog = Task {
      try await Task.sleep(for: .seconds(15))
      process.terminate(SIGKILL)
    }
    let status = await process.wait()
    watchdog.cancel()
    return status
  }
}
