import Nearby
import NearbySystem
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// `nearby chat --plain --accept all` (or `--json`) in a child process on a port of its own (found
/// free first), with a private service type and state directory, its standard input kept
/// open, and its standard output going to /dev/null or to a pipe read only on request.
final class FloodedChatProcess: Sendable {
  let child: ChildProcess
  let port: UInt16
  private let inputFD: Int32
  /// The read end of the output pipe (unreadPipe), or -1.
  private let outputFD: Int32
  private let readerStarted = Atomic<Bool>(false)

  init(executable: String, output: ChatFlood.Output, json: Bool = false) throws {
    guard let port = Self.freePort() else { throw BenchError("no free port on 127.0.0.1") }
    self.port = port
    var input: [Int32] = [0, 0]
    var out: [Int32] = [-1, -1]
    guard pipe(&input) == 0 else { throw BenchError("pipe failed") }
    if output == .unreadPipe, pipe(&out) != 0 { throw BenchError("pipe failed") }
    for fd in [input[1], out[0]] where fd >= 0 { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
    var template = Array("/tmp/nearby-flood-XXXXXX".utf8CString)
    let state = template.withUnsafeMutableBufferPointer { String(cString: mkdtemp($0.baseAddress!)) }
    let service = "flood" + String(UInt32.random(in: 0...UInt32.max), radix: 36)
    var environment: [String: String] = [:]
    for name in ["PATH", "HOME", "NEARBY_AVAHI", "LANG"] { if let value = getenv(name) { environment[name] = String(cString: value) } }
    child = try ChildProcess(
      executable,
      [
        "chat", json ? "--json" : "--plain", "--name", "flooded", "--accept", "all", "--service", String(service.prefix(15)), "--state-dir", state,
        "--port", "\(port)",
      ],
      environment: environment, standardInput: .descriptor(input[0]), standardOutput: output == .devNull ? .null : .descriptor(out[1]),
      standardError: .null)
    close(input[0])
    if out[1] >= 0 { close(out[1]) }
    inputFD = input[1]
    outputFD = out[0]
  }

  var pid: pid_t { child.pid }

  var residentBytes: Int { Self.residentBytes(of: pid) }

  /// The resident memory of process `pid` in bytes (`VmRSS`), 0 if it is gone.
  static func residentBytes(of pid: pid_t) -> Int {
    let fd = open("/proc/\(pid)/status", O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { return 0 }
    defer { close(fd) }
    var buffer = [UInt8](repeating: 0, count: 4096)
    let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
    guard count > 0 else { return 0 }
    let text = String(decoding: buffer[0..<count], as: UTF8.self)
    guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }) else { return 0 }
    return (Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0) * 1024
  }

  /// Starts reading the output pipe (on a thread), keeping the first 160 bytes of each line.
  func readOutput() -> OutputLines {
    let lines = OutputLines()
    guard outputFD >= 0, !readerStarted.exchange(true, ordering: .relaxed) else { return lines }
    let fd = outputFD
    LineReader.read(fd: fd, maximumLineBytes: 160, closeAtEnd: true, line: { lines.append($0) }, end: {})
    return lines
  }

  /// Ends the chat: SIGTERM (its stdin stays open: a chat at end of input waits for its
  /// deliveries first), SIGKILL after 10 s.
  func stop() async {
    close(inputFD)
    if outputFD >= 0, !readerStarted.exchange(true, ordering: .relaxed) { close(outputFD) }
    child.terminate()
    let watchdog = Task { [child] in
      try await Task.sleep(for: .seconds(10))
      child.terminate(SIGKILL)
    }
    _ = await child.wait()
    watchdog.cancel()
  }

  static func freePort() -> UInt16? {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
    }
    return bound ? UInt16(bigEndian: address.sin_port) : nil
  }
}

/// Lines read so far (their beginnings).
final class OutputLines: Sendable {
  private let stored = Mutex<[String]>([])
  func append(_ line: String) { stored.withLock { $0.append(line) } }
  var lines: [String] { stored.withLock { $0 } }
}
