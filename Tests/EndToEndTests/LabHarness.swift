import Foundation
import NearbySystem
import NearbyTestSupport
import NearbyTransport
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// The built `nearby` and the repository's examples, found from this file's path.
enum LabPaths {
  static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path
  static let nearby = root + "/.build/debug/nearby"
  static func example(_ name: String) -> String { root + "/Examples/" + name }
}

/// A `nearby` process run to completion, with its output.
struct NearbyRun: Sendable {
  var status: Int32
  var output: String
  var elapsed: Duration

  /// The LAN id the lab announced (`building LAN ID: ...`).
  var lanID: String? {
    guard let range = output.range(of: "building LAN ") else { return nil }
    return output[range.upperBound...].prefix { $0 != ":" }.description
  }
}

/// Runs the built `nearby` with `arguments` (its environment plus `environment`), stdin
/// from `input` (or /dev/null), and returns its exit status and combined output.
/// - Parameters:
///   - signal: sent to it after `signalAfter` (to test Ctrl-C handling).
///   - launcher: a command that runs it (`setpriv ... --`).
///   - executable: another `nearby` than the built one.
func runNearby(
  _ arguments: [String], environment extra: [String: String] = [:], input: String? = nil, timeout: Duration = .seconds(90),
  signal: (Int32, after: Duration)? = nil, launcher: [String] = [], executable: String = LabPaths.nearby
) async throws -> NearbyRun {
  guard access(executable, X_OK) == 0 else {
    throw WaitError(description: "\(executable) is missing: build it first (swift build; scripts/test does)")
  }
  var environment = ProcessInfo.processInfo.environment
  environment.merge(extra) { $1 }
  let output = try OutputCapture()
  var stdin = ChildProcess.Stream.null
  var inputFD: Int32 = -1
  if let input {
    // The input from a file: no writer to keep alive, and end of file comes by itself.
    let directory = try scriptsDirectory(["input": input])
    inputFD = open(directory + "/input", O_RDONLY | O_CLOEXEC)
    removeDirectory(directory)
    guard inputFD >= 0 else { throw WaitError(description: "cannot open \(directory)/input") }
    stdin = .descriptor(inputFD)
  }
  let started = ContinuousClock.now
  let command = launcher + [executable] + arguments
  let child = try ChildProcess(
    command[0], Array(command.dropFirst()), environment: environment, standardInput: stdin, standardOutput: .descriptor(output.writeFD),
    standardError: .descriptor(output.writeFD))
  output.closeWriteEnd()
  if inputFD >= 0 { close(inputFD) }
  let outcome = await withTaskGroup(of: Int32?.self) { group in
    group.addTask { await child.wait() }
    group.addTask {
      if let signal {
        try? await Task.sleep(for: signal.after)
        if Task.isCancelled { return nil }
        child.terminate(signal.0)
      }
      try? await Task.sleep(for: timeout)
      if !Task.isCancelled { child.terminate(SIGKILL) }
      return nil
    }
    var status: Int32 = -1
    while let result = await group.next() {
      if let result {
        status = result
        group.cancelAll()
      }
    }
    return status
  }
  let text = await output.read()
  let elapsed = ContinuousClock.now - started
  if outcome == 128 + SIGKILL && elapsed >= timeout {
    throw WaitError(description: "nearby \(arguments.joined(separator: " ")) did not finish within \(timeout):\n\(text)")
  }
  return NearbyRun(status: outcome, output: text, elapsed: elapsed)
}

/// Whether `ip netns list` still shows namespaces of LAN `id`.
func namespacesRemain(of id: String) async throws -> Bool {
  let (_, output) = try await run(["ip", "netns", "list"])
  return output.contains("-\(id)")
}

/// Files for a lab run made up by a test, in a fresh directory.
func scriptsDirectory(_ files: [String: String]) throws -> String {
  var template = Array("/tmp/nearby-labtest-XXXXXX".utf8CString)
  let directory = template.withUnsafeMutableBufferPointer { String(cString: mkdtemp($0.baseAddress!)) }
  for (name, text) in files {
    // O_CLOEXEC: a process another test spawns meanwhile must not inherit the descriptor
    // (an executable file open for writing cannot be run: ETXTBSY).
    let fd = open(directory + "/" + name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o755)
    guard fd >= 0 else { throw WaitError(description: "cannot create \(directory)/\(name)") }
    let bytes = Array(text.utf8)
    let written = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    close(fd)
    guard written == bytes.count else { throw WaitError(description: "cannot write \(directory)/\(name)") }
  }
  return directory
}

/// Removes a directory made by ``scriptsDirectory(_:)``.
func removeDirectory(_ path: String) {
  try? FileManager.default.removeItem(atPath: path)
}
