import Foundation
import NearbySystem
import NearbyTransport
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// Paths of the repository and its built tools, found from this file's location.
public enum Repository {
  public static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path
  /// The `nearby` executable built by `swift build` (debug).
  public static let nearby = root + "/.build/debug/nearby"
  /// The private-LAN harness built by `swift build` (`scripts/lan` runs it too).
  public static let lan = root + "/.build/debug/nearby-lan"

  /// A fresh temporary directory (for a peer's --state-dir), inside this test process's
  /// own directory under /tmp, which is removed when the process exits: runs used to leave
  /// every one behind (a thousand runs' worth held 11 GB, mostly test files).
  public static func temporaryDirectory(_ prefix: String = "nearby-test") -> String {
    makeDirectory(TemporaryFiles.root + "/\(prefix)-XXXXXX")
  }

  fileprivate static func makeDirectory(_ template: String) -> String {
    var bytes = Array(template.utf8CString)
    guard let made = bytes.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
      fatalError("cannot create a temporary directory from \(template): \(String(cString: strerror(errno)))")
    }
    return String(cString: made)
  }
}

/// The directory that holds this process's temporary directories, and its removal at exit.
private enum TemporaryFiles {
  static let root: String = {
    let root = Repository.makeDirectory("/tmp/nearby-tests-\(getpid())-XXXXXX")
    // Others may pass through (tests run peers as another user); what is inside is each
    // directory's own business (mkdtemp makes them 0700).
    chmod(root, 0o755)
    atexit { try? FileManager.default.removeItem(atPath: TemporaryFiles.root) }
    return root
  }()
}

/// A multi-host LAN made by `nearby-lan up` (scripts/lan), torn down by ``down()``.
public final class TestLAN: Sendable {
  public let id: String
  public let hosts: [String]

  /// - Parameter segments: e.g. `["a,b"]`, or `["a,r", "r,c"]` for two segments joined by r.
  public init(_ segments: [String]) async throws {
    id = "t\(String(UInt32.random(in: 0...UInt32.max), radix: 36))"
    var names: [String] = []
    for segment in segments {
      for host in segment.split(separator: ",").map(String.init) where !names.contains(host) { names.append(host) }
    }
    hosts = names
    let (status, output) = try await NearbyTestSupport.run([Repository.lan, "up", id] + segments, timeout: .seconds(60))
    guard status == 0 else { throw WaitError(description: "lan up failed (\(status)): \(output)") }
  }

  /// The IPv4 address of a host (on its first segment, or the given one).
  public func address(_ host: String, segment: Int? = nil) async throws -> String {
    let (status, output) = try await NearbyTestSupport.run([Repository.lan, "addr", id, host] + (segment.map { [String($0)] } ?? []))
    guard status == 0 else { throw WaitError(description: "lan addr failed: \(output)") }
    return output.trimmingCharacters(in: .whitespacesAndNewlines)
  }

  /// Runs a command in a host to completion.
  public func run(_ host: String, _ command: [String], timeout: Duration = .seconds(30)) async throws -> (status: Int32, output: String) {
    try await NearbyTestSupport.run([Repository.lan, "exec", id, host, "--"] + command, timeout: timeout)
  }

  /// Stops or starts a host's avahi-daemon.
  public func avahi(_ host: String, _ action: String) async throws {
    let (status, output) = try await NearbyTestSupport.run([Repository.lan, "avahi", id, host, action], timeout: .seconds(30))
    guard status == 0 else { throw WaitError(description: "lan avahi \(action) failed: \(output)") }
  }

  public func down() async {
    _ = try? await NearbyTestSupport.run([Repository.lan, "down", id], timeout: .seconds(60))
  }

  /// Runs `body` on a new LAN and tears the LAN down when it returns or throws, before this
  /// returns. (A teardown left to an unstructured task could still be running when the test
  /// process exited, and raced `lan loopback`'s own sweep of the same namespaces.)
  public nonisolated(nonsending) static func with<Result>(_ segments: [String], _ body: (TestLAN) async throws -> Result) async throws -> Result {
    let lan = try await TestLAN(segments)
    do {
      let result = try await body(lan)
      await lan.down()
      return result
    } catch {
      await lan.down()
      throw error
    }
  }
}

/// A running `nearby` process: its stdin is a pipe the test writes commands to, its stdout
/// lines are recorded (and parsed as JSON when they are JSON objects).
public final class PeerProcess: Sendable {
  public let child: ChildProcess
  public let name: String
  private let stdinFD: Int32
  private let lines: Recorder<String>
  private let stdinOpen = Mutex(true)

  /// Starts `nearby ARGUMENTS`, optionally inside a host of a ``TestLAN``.
  public init(_ name: String, _ arguments: [String], in lan: TestLAN? = nil, host: String? = nil, environment: [String: String] = [:]) throws {
    self.name = name
    var input: [Int32] = [0, 0]
    var output: [Int32] = [0, 0]
    guard pipe(&input) == 0, pipe(&output) == 0 else { throw WaitError(description: "pipe failed") }
    _ = fcntl(input[1], F_SETFD, FD_CLOEXEC)
    _ = fcntl(output[0], F_SETFD, FD_CLOEXEC)
    var command = [Repository.nearby] + arguments
    if let lan, let host { command = [Repository.lan, "exec", lan.id, host, "--"] + command }
    var variables = ProcessInfo.processInfo.environment
    for (key, value) in environment { variables[key] = value }
    child = try ChildProcess(
      command[0], Array(command.dropFirst()), environment: variables, standardInput: .descriptor(input[0]), standardOutput: .descriptor(output[1]),
      standardError: .descriptor(output[1]))
    close(input[0])
    close(output[1])
    stdinFD = input[1]
    let (stream, continuation) = AsyncStream.makeStream(of: String.self)
    lines = Recorder(stream)
    let readFD = output[0]
    Thread.detachNewThread {
      var pending: [UInt8] = []
      var buffer = [UInt8](repeating: 0, count: 65536)
      while true {
        let count = buffer.withUnsafeMutableBytes { Glibc.read(readFD, $0.baseAddress, $0.count) }
        if count < 0 && errno == EINTR { continue }
        if count <= 0 { break }
        for byte in buffer[0..<count] {
          if byte == 10 {
            continuation.yield(String(decoding: pending, as: UTF8.self))
            pending.removeAll()
          } else {
            pending.append(byte)
          }
        }
      }
      if !pending.isEmpty { continuation.yield(String(decoding: pending, as: UTF8.self)) }
      close(readFD)
      continuation.finish()
    }
  }

  /// Sends a line to the process's stdin.
  public func send(_ line: String) {
    stdinOpen.withLock { open in
      guard open else { return }
      let bytes = Array((line + "\n").utf8)
      _ = bytes.withUnsafeBytes { write(stdinFD, $0.baseAddress, $0.count) }
    }
  }

  /// Closes stdin (end of input).
  public func closeInput() {
    stdinOpen.withLock { open in
      if open {
        close(stdinFD)
        open = false
      }
    }
  }

  /// Every line so far that no ``expect`` consumed.
  public var unconsumed: [String] { lines.all }

  /// Waits for a JSON line whose `event` is `event` and that `match` accepts.
  @discardableResult
  public func expect(
    _ event: String, within timeout: Duration = .seconds(15), where match: @escaping @Sendable ([String: Any]) -> Bool = { _ in true }
  )
    async throws -> JSONObject
  {
    let name = self.name
    return try await lines.next(within: timeout, "\(name): \(event)") { line in
      guard let object = JSONObject(line), object["event"] as? String == event, match(object.value) else { return nil }
      return object
    }
  }

  /// Waits for a text line containing `text`.
  @discardableResult
  public func expectLine(containing text: String, within timeout: Duration = .seconds(15)) async throws -> String {
    try await lines.next(within: timeout, "\(name): a line containing '\(text)'") { $0.contains(text) ? $0 : nil }
  }

  /// Waits for the process to exit (killing it after `timeout`).
  public func wait(timeout: Duration = .seconds(20)) async -> Int32 {
    let child = self.child
    let watchdog = Task {
      try await Task.sleep(for: timeout)
      child.terminate(SIGKILL)
    }
    let status = await child.wait()
    watchdog.cancel()
    return status
  }

  /// Ends the process: closes stdin, then SIGTERM, then SIGKILL, and waits.
  public func stop() async {
    closeInput()
    if child.exitStatus == nil {
      child.terminate(SIGTERM)
      _ = await wait(timeout: .seconds(5))
    }
  }
}

/// A parsed JSON object line (Sendable wrapper: JSON values are immutable here).
public struct JSONObject: @unchecked Sendable {
  public let value: [String: Any]
  public init?(_ line: String) {
    guard line.hasPrefix("{"), let data = line.data(using: .utf8), let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any]
    else { return nil }
    value = object
  }
  public subscript(key: String) -> Any? { value[key] }
  /// `peer.name` and similar paths.
  public func string(_ path: String) -> String? {
    var current: Any? = value
    for key in path.split(separator: ".") { current = (current as? [String: Any])?[String(key)] }
    return current as? String
  }
}
