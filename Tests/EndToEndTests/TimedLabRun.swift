import Foundation
import NearbySystem
import NearbyTestSupport
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// A `nearby lab` run whose output lines carry the time they arrived, read while it runs (a
/// fault scenario prints thousands of lines), so that a test can measure how long after a
/// fault something happened.
struct TimedLabRun: Sendable {
  struct Line: Sendable {
    /// Since the lab was started.
    var at: Duration
    var text: String
  }

  var status: Int32
  var lines: [Line]
  var elapsed: Duration

  var output: String { lines.map(\.text).joined(separator: "\n") }
  var lanID: String? { NearbyRun(status: status, output: output, elapsed: elapsed).lanID }

  /// The lines of one host, without their `host | ` prefix.
  func lines(of host: String) -> [Line] {
    lines.compactMap { line in
      guard let bar = line.text.firstIndex(of: "|"), line.text[..<bar].trimmingCharacters(in: .whitespaces) == host else { return nil }
      return Line(at: line.at, text: String(line.text[line.text.index(after: bar)...].dropFirst()))
    }
  }

  /// The first line of `host` (or the lab) containing `text`.
  func first(_ host: String, containing text: String) -> Line? { lines(of: host).first { $0.text.contains(text) } }

  /// The last line of `host` containing `text`.
  func last(_ host: String, containing text: String) -> Line? { lines(of: host).last { $0.text.contains(text) } }

  /// The received message texts a host's chat printed (`[12:00:01] alice: text`), in order.
  func messages(at host: String, from sender: String) -> [String] {
    lines(of: host).compactMap { line in
      guard line.text.hasPrefix("["),
        let range = line.text.range(of: "] \(sender): ") ?? line.text.range(of: "] \(sender) (private): ")
      else { return nil }
      return String(line.text[range.upperBound...])
    }
  }
}

/// Runs the built `nearby` with `arguments`, reading and timestamping its output as it comes.
func runTimedLab(_ arguments: [String], environment extra: [String: String] = [:], timeout: Duration = .seconds(180)) async throws
  -> TimedLabRun
{
  guard access(LabPaths.nearby, X_OK) == 0 else { throw WaitError(description: "\(LabPaths.nearby) is missing: build it first") }
  var environment = ProcessInfo.processInfo.environment
  environment.merge(extra) { $1 }
  var fds: [Int32] = [0, 0]
  guard pipe(&fds) == 0 else { throw WaitError(description: "pipe failed") }
  _ = fcntl(fds[0], F_SETFD, FD_CLOEXEC)
  let started = ContinuousClock.now
  let child = try ChildProcess(
    LabPaths.nearby, arguments, environment: environment, standardInput: .null, standardOutput: .descriptor(fds[1]),
    standardError: .descriptor(fds[1]))
  close(fds[1])
  let collector = LineCollector()
  let reader = fds[0]
  let finished = Task {
    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
      Thread.detachNewThread {
        var pending: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        var quiet = 0
        while true {
          // Once the lab has exited, whatever still holds the pipe is not waited for long.
          var descriptor = pollfd(fd: reader, events: Int16(POLLIN), revents: 0)
          let ready = poll(&descriptor, 1, 50)
          if ready == 0 {
            if collector.done.load(ordering: .acquiring) {
              quiet += 50
              if quiet >= 500 { break }
            }
            continue
          }
          if ready < 0 {
            if errno == EINTR { continue }
            break
          }
          quiet = 0
          let count = buffer.withUnsafeMutableBytes { read(reader, $0.baseAddress, $0.count) }
          if count < 0 && errno == EINTR { continue }
          if count <= 0 { break }
          let now = ContinuousClock.now - started
          pending.append(contentsOf: buffer[0..<count])
          while let newline = pending.firstIndex(of: 10) {
            let text = String(decoding: pending[..<newline], as: UTF8.self)
            pending.removeSubrange(...newline)
            collector.lines.withLock { $0.append(TimedLabRun.Line(at: now, text: text)) }
          }
        }
        if !pending.isEmpty {
          let text = String(decoding: pending, as: UTF8.self)
          collector.lines.withLock { $0.append(TimedLabRun.Line(at: ContinuousClock.now - started, text: text)) }
        }
        close(reader)
        continuation.resume()
      }
    }
  }
  let watchdog = Task {
    try await Task.sleep(for: timeout)
    if !collector.done.load(ordering: .acquiring) { child.terminate(SIGKILL) }
  }
  let status = await child.wait()
  collector.done.store(true, ordering: .releasing)
  watchdog.cancel()
  // The lab's daemons are gone with it; its pipe ends when the last writer closes it.
  await finished.value
  let elapsed = ContinuousClock.now - started
  let lines = collector.lines.withLock { $0 }
  if status == 128 + SIGKILL && elapsed >= timeout {
    throw WaitError(
      description: "nearby \(arguments.joined(separator: " ")) did not finish within \(timeout):\n\(lines.map(\.text).joined(separator: "\n"))")
  }
  return TimedLabRun(status: status, lines: lines, elapsed: elapsed)
}

/// What the reading thread fills, and whether the lab has exited.
private final class LineCollector: Sendable {
  let lines = Mutex<[TimedLabRun.Line]>([])
  let done = Atomic<Bool>(false)
}
