import Foundation
import NearbyLab
import NearbySystem
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// `nearby bench` in its hidden target mode (`NEARBY_BENCH_TARGET`): one session on
/// 127.0.0.1 in a process of its own, so that its memory is measured without the test's.
package final class TargetProcess: Sendable {
  package let child: ChildProcess
  package let port: UInt16
  /// The latest `budget` line: bytes held, the peak, connections closed.
  private let figures: FiguresBox

  final class FiguresBox: Sendable {
    let value = Mutex<(held: Int, peak: Int, closed: Int)>((0, 0, 0))
  }

  /// Starts it with `settings` (see `BenchRunner.runTargetProcess`) and waits for its port.
  package init(settings: String) async throws {
    var fds: [Int32] = [0, 0]
    guard pipe(&fds) == 0 else { throw SecureTestPeerError("pipe failed") }
    _ = fcntl(fds[0], F_SETFD, FD_CLOEXEC)
    var environment = ProcessInfo.processInfo.environment
    environment["NEARBY_BENCH_TARGET"] = settings
    child = try ChildProcess(
      Repository.nearby, ["bench"], environment: environment, standardInput: .null, standardOutput: .descriptor(fds[1]),
      standardError: .inherit)
    close(fds[1])
    let figures = FiguresBox()
    self.figures = figures
    let line = await withCheckedContinuation { (continuation: CheckedContinuation<String, Never>) in
      Thread.detachNewThread { [readFD = fds[0]] in
        var first: CheckedContinuation<String, Never>? = continuation
        var pending: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        func take(_ line: String) {
          if let waiting = first {
            first = nil
            waiting.resume(returning: line)
            return
          }
          guard line.hasPrefix("budget ") else { return }
          var values: [String: Int] = [:]
          for field in line.dropFirst(7).split(separator: " ") {
            let parts = field.split(separator: "=")
            if parts.count == 2 { values[String(parts[0])] = Int(parts[1]) }
          }
          figures.value.withLock { $0 = (values["held"] ?? 0, values["peak"] ?? 0, values["closed"] ?? 0) }
        }
        while true {
          let count = buffer.withUnsafeMutableBytes { read(readFD, $0.baseAddress, $0.count) }
          if count < 0 && errno == EINTR { continue }
          if count <= 0 { break }
          for byte in buffer[0..<count] {
            if byte == 10 {
              take(String(decoding: pending, as: UTF8.self))
              pending.removeAll()
            } else {
              pending.append(byte)
            }
          }
        }
        close(readFD)
        first?.resume(returning: "")
      }
    }
    guard line.hasPrefix("port "), let port = UInt16(line.dropFirst(5)) else {
      child.terminate(SIGKILL)
      throw SecureTestPeerError("the target process did not start: '\(line)'")
    }
    self.port = port
  }

  /// Its receive budget as it last reported it.
  package var budgetFigures: (held: Int, peak: Int, closed: Int) { figures.value.withLock { $0 } }

  /// Waits until the reported figures satisfy `done` (or `timeout` passes). - Returns: them.
  @discardableResult
  package func waitForBudget(within timeout: Duration = .seconds(20), _ done: ((held: Int, peak: Int, closed: Int)) -> Bool) async
    -> (held: Int, peak: Int, closed: Int)
  {
    let deadline = ContinuousClock.now + timeout
    while !done(budgetFigures), ContinuousClock.now < deadline { try? await Task.sleep(for: .milliseconds(20)) }
    return budgetFigures
  }

  /// The CPU time it used so far (user and system, from /proc/PID/stat).
  package var cpuTime: Duration {
    guard let stat = try? String(contentsOfFile: "/proc/\(child.pid)/stat", encoding: .utf8),
      let end = stat.lastIndex(of: ")")
    else { return .zero }
    let fields = stat[stat.index(after: end)...].split(separator: " ")
    // After the command: state is field 3, utime 14 and stime 15 (1-based, in clock ticks).
    guard fields.count > 13, let user = Int(fields[11]), let system = Int(fields[12]) else { return .zero }
    return .milliseconds((user + system) * 1000 / Int(sysconf(Int32(_SC_CLK_TCK))))
  }

  /// Its resident memory in bytes (`VmRSS` of /proc/PID/status).
  package var residentBytes: Int { Self.residentBytes(of: child.pid) }

  /// The resident memory of process `pid` in bytes, 0 if it is gone.
  package static func residentBytes(of pid: pid_t) -> Int {
    guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
      let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") })
    else { return 0 }
    return (Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0) * 1024
  }

  package func stop() async {
    child.terminate()
    _ = await child.wait()
  }
}

/// Samples a process's resident memory every 20 ms until stopped. - Returns: the peak.
package final class RSSSampler: Sendable {
  private let task: Task<Int, Never>

  package init(pid: pid_t) {
    task = Task.detached {
      var peak = 0
      while !Task.isCancelled {
        peak = max(peak, TargetProcess.residentBytes(of: pid))
        try? await Task.sleep(for: .milliseconds(20))
      }
      return max(peak, TargetProcess.residentBytes(of: pid))
    }
  }

  package func stop() async -> Int {
    task.cancel()
    return await task.value
  }
}
