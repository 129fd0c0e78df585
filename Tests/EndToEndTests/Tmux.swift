import Foundation
import NearbySystem
import NearbyTestSupport
import NearbyTransport

#if canImport(Glibc)
  import Glibc
#endif

/// A tmux server of one test (its own socket, so parallel tests and a person's own tmux are
/// never touched) with one session running a plain shell.
final class Tmux: Sendable {
  static var isAvailable: Bool {
    ["/usr/bin/tmux", "/usr/local/bin/tmux", "/bin/tmux"].contains { FileManager.default.isExecutableFile(atPath: $0) }
  }

  let socket: String
  let target = "chat"

  /// Starts `bash` (no rc files, prompt `$ `) in a detached session of `columns`×`rows`.
  init(columns: Int, rows: Int) async throws {
    socket = "nearby-e2e-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
    try await command(
      "new-session", "-d", "-x", String(columns), "-y", String(rows), "-s", target, "env", "PS1=$ ", "bash", "--norc",
      "--noprofile")
  }

  /// Runs a tmux command against this server. - Returns: its output.
  @discardableResult
  func command(_ arguments: String...) async throws -> String {
    try await command(arguments)
  }

  @discardableResult
  func command(_ arguments: [String]) async throws -> String {
    // -u: UTF-8 whatever the locale; -f /dev/null: no configuration of the machine.
    let result = try await Self.run(["tmux", "-u", "-f", "/dev/null", "-L", socket] + arguments)
    guard result.status == 0 else { throw WaitError(description: "tmux \(arguments.joined(separator: " ")): \(result.output)") }
    return result.output
  }

  /// Like NearbyTestSupport's `run`, but the output pipe is close-on-exec in the child: the
  /// tmux server that `new-session` forks must not keep it open (the output would never end).
  static func run(_ arguments: [String]) async throws -> (status: Int32, output: String) {
    let output = try OutputCapture()
    _ = fcntl(output.writeFD, F_SETFD, FD_CLOEXEC)
    let child = try ChildProcess(
      arguments[0], Array(arguments.dropFirst()), standardInput: .null, standardOutput: .descriptor(output.writeFD),
      standardError: .descriptor(output.writeFD))
    output.closeWriteEnd()
    let watchdog = Task {
      try await Task.sleep(for: .seconds(10))
      child.terminate(SIGKILL)
    }
    let status = await child.wait()
    watchdog.cancel()
    return (status, await output.read())
  }

  /// Types text as is (no key names).
  func type(_ text: String) async throws { try await command("send-keys", "-t", target, "-l", text) }

  /// Presses keys by name (`Enter`, `C-u`).
  func press(_ keys: String...) async throws { try await command(["send-keys", "-t", target] + keys) }

  /// The visible rows (trailing spaces removed by tmux).
  func screen() async throws -> [String] {
    let text = try await command("capture-pane", "-p", "-t", target)
    var rows = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
    if rows.last == "" { rows.removeLast() }
    return rows
  }

  /// Waits until the screen satisfies `condition`. - Returns: that screen.
  @discardableResult
  func waitForScreen(_ what: String, within timeout: Duration = .seconds(20), _ condition: ([String]) -> Bool) async throws -> [String] {
    let deadline = ContinuousClock.now + timeout
    var rows: [String] = []
    while ContinuousClock.now < deadline {
      rows = try await screen()
      if condition(rows) { return rows }
      try await Task.sleep(for: .milliseconds(100))
    }
    throw WaitError(description: "no \(what) within \(timeout); the screen:\n" + rows.joined(separator: "\n"))
  }

  func resize(columns: Int, rows: Int) async throws {
    try await command("resize-window", "-t", target, "-x", String(columns), "-y", String(rows))
  }

  /// Stops this server (and whatever still runs in it) and removes its socket file, which
  /// tmux leaves behind.
  func kill() async {
    let path = try? await command("display-message", "-p", "#{socket_path}").trimmingCharacters(in: .whitespacesAndNewlines)
    _ = try? await command("kill-server")
    if let path, path.hasSuffix("/" + socket) { unlink(path) }
  }
}

extension [String] {
  /// The rows without blank ones at the end.
  var trimmedBottom: [String] {
    var rows = self
    while rows.last?.isEmpty == true { rows.removeLast() }
    return rows
  }

  /// The last row that is not blank.
  var lastContent: String { trimmedBottom.last ?? "" }
}
