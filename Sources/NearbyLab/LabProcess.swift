import CNearbySystem
import NearbySystem

#if canImport(Glibc)
  import Glibc
#endif

/// Running helper processes and reading their output, off the cooperative pool.
enum LabProcess {
  /// Runs a command with stdin from /dev/null and returns its exit code and its stdout and
  /// stderr together.
  /// - Parameter timeout: SIGKILL for the command after this long (its code is then 137).
  static func capture(_ arguments: [String], environment: [String: String]? = nil, timeout: Duration? = nil) async -> (code: Int32, output: String) {
    guard let pipe = LabPipe() else { return (1, "cannot create a pipe: \(String(cString: strerror(errno)))") }
    let child: ChildProcess
    do {
      child = try ChildProcess(
        arguments[0], Array(arguments.dropFirst()), environment: environment, standardInput: .null, standardOutput: .descriptor(pipe.write),
        standardError: .descriptor(pipe.write))
    } catch {
      pipe.closeWrite()
      close(pipe.read)
      return (127, "\(error)")
    }
    pipe.closeWrite()
    let collected = PrefixedPipe.collect(fd: pipe.read)
    let code = await withTaskGroup(of: Int32?.self) { group in
      group.addTask { await child.wait() }
      if let timeout {
        group.addTask {
          try? await Task.sleep(for: timeout)
          if !Task.isCancelled { child.terminate(SIGKILL) }
          return nil
        }
      }
      var code: Int32 = 1
      for await result in group {
        if let result {
          code = result
          group.cancelAll()
        }
      }
      return code
    }
    // Its output has ended by now, unless a process it left behind holds the pipe.
    let output = await collected.text()
    return (code, output)
  }
}

/// A pipe whose both ends close on exec (a child gets only what is dup'ed into it).
final class LabPipe: @unchecked Sendable {
  let read: Int32
  let write: Int32
  private var writeOpen = true

  init?() {
    var fds: [Int32] = [0, 0]
    // Atomically close-on-exec: the harness starts processes from several tasks at once.
    guard nearby_pipe_cloexec(&fds) == 0 else { return nil }
    read = fds[0]
    write = fds[1]
  }

  func closeWrite() {
    if writeOpen {
      close(write)
      writeOpen = false
    }
  }
}
