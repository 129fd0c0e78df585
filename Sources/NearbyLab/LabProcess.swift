import NearbySystem
import NearbyTransport

#if canImport(Glibc)
  import Glibc
#endif

/// The private-LAN harness, `scripts/lan`: it builds network namespaces with their own
/// Avahi, runs commands in them and tears them down.
public struct LANHarness: Sendable {
  /// The script's path.
  public let path: String

  public init(path: String) { self.path = path }

  /// Where the harness is, in order: `$NEARBY_LAN_SCRIPT`; `<repo>/scripts/lan` when the
  /// executable is `<repo>/.build/.../nearby`; `nearby-lan` or `lan` in `PATH`.
  /// - Parameters:
  ///   - executable: the running `nearby`'s path (symbolic links resolved).
  ///   - isExecutable: whether a path is an executable file.
  /// - Throws: ``LANHarnessNotFound`` with the places it looked and what to do.
  public static func locate(environment: [String: String], executable: String, isExecutable: (String) -> Bool) throws(LANHarnessNotFound)
    -> LANHarness
  {
    var looked: [String] = []
    if let explicit = environment["NEARBY_LAN_SCRIPT"], !explicit.isEmpty {
      if isExecutable(explicit) { return LANHarness(path: explicit) }
      throw LANHarnessNotFound(looked: ["NEARBY_LAN_SCRIPT=\(explicit) (not an executable file)"])
    }
    let components = executable.split(separator: "/", omittingEmptySubsequences: false)
    if let build = components.lastIndex(of: ".build"), build > 0 {
      let repository = components[..<build].joined(separator: "/")
      let candidate = (repository.isEmpty ? "" : repository) + "/scripts/lan"
      if isExecutable(candidate) { return LANHarness(path: candidate) }
      looked.append(candidate)
    } else {
      looked.append("<repository>/scripts/lan (\(executable) is not inside a .build directory)")
    }
    let directories = (environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin").split(separator: ":").map(String.init)
    for name in ["nearby-lan", "lan"] {
      for directory in directories where !directory.isEmpty {
        let candidate = directory + "/" + name
        if isExecutable(candidate) { return LANHarness(path: candidate) }
      }
      looked.append("\(name) in PATH")
    }
    throw LANHarnessNotFound(looked: looked)
  }

  /// Whether `path` is a regular file we may execute.
  public static func isExecutableFile(_ path: String) -> Bool {
    var info = stat()
    return stat(path, &info) == 0 && info.st_mode & S_IFMT == S_IFREG && access(path, X_OK) == 0
  }

  /// Runs `lan ARGUMENTS...` to completion.
  /// - Returns: its exit code and combined output.
  public func run(_ arguments: [String]) async -> (code: Int32, output: String) {
    await LabProcess.capture([path] + arguments)
  }
}

/// The harness could not be found.
public struct LANHarnessNotFound: Error, Sendable, CustomStringConvertible {
  public var looked: [String]

  public var description: String {
    "cannot find the private-LAN harness scripts/lan (looked at: \(looked.joined(separator: "; "))): "
      + "set NEARBY_LAN_SCRIPT=/path/to/nearby/scripts/lan, or put it in PATH as nearby-lan"
  }
}

/// Running helper processes and reading their output, off the cooperative pool.
enum LabProcess {
  /// Runs a command with stdin from /dev/null and returns its exit code and its stdout and
  /// stderr together.
  static func capture(_ arguments: [String], environment: [String: String]? = nil) async -> (code: Int32, output: String) {
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
    let code = await child.wait()
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
    // pipe2 is not exported by Glibc's module; the lab spawns from one task at a time, so
    // no child can be started between pipe and fcntl.
    guard pipe(&fds) == 0 else { return nil }
    read = fds[0]
    write = fds[1]
    _ = fcntl(read, F_SETFD, FD_CLOEXEC)
    _ = fcntl(write, F_SETFD, FD_CLOEXEC)
  }

  func closeWrite() {
    if writeOpen {
      close(write)
      writeOpen = false
    }
  }
}
