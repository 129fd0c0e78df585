import CNearbySystem
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// A child process started with `posix_spawn`, with every signal unblocked and at its
/// default disposition.
///
/// Foundation's `Process` passes on the signal mask of the spawning thread, and the
/// threads of Swift's concurrency runtime block most signals, so its children ignore
/// SIGTERM and SIGINT. This type resets both, so `terminate()` works.
///
/// Every child is reaped as soon as it ends, by a thread started with it, whether or not
/// anyone calls ``wait()``: a child that is never waited for would stay a zombie (and a
/// process waiting for "any child", as Swift Testing's exit tests do, would see it forever).
public final class ChildProcess: Sendable {
  public let pid: pid_t
  private let reaper: Reaper

  /// What to connect a standard stream to.
  public enum Stream: Sendable {
    case inherit
    case null
    /// An open descriptor (duplicated into the child).
    case descriptor(Int32)
  }

  /// Starts `executable` (searched in `PATH` when it has no slash).
  /// - Parameters:
  ///   - environment: `nil` keeps ours; otherwise the child's whole environment.
  ///   - newProcessGroup: puts the child in its own process group (so a signal to the group
  ///     reaches its children too).
  ///   - newSession: makes the child the leader of a new session (`setsid`): no controlling
  ///     terminal, so a Ctrl-C meant for us never reaches it (daemons).
  /// - Throws: ``SystemError`` naming `posix_spawn` and the executable.
  public init(
    _ executable: String, _ arguments: [String], environment: [String: String]? = nil, standardInput: Stream = .inherit,
    standardOutput: Stream = .inherit, standardError: Stream = .inherit, newProcessGroup: Bool = false,
    newSession: Bool = false
  ) throws(SystemError) {
    var attributes = posix_spawnattr_t()
    posix_spawnattr_init(&attributes)
    defer { posix_spawnattr_destroy(&attributes) }
    var empty = sigset_t()
    sigemptyset(&empty)
    var all = sigset_t()
    sigfillset(&all)
    posix_spawnattr_setsigmask(&attributes, &empty)
    posix_spawnattr_setsigdefault(&attributes, &all)
    var flags = Int32(POSIX_SPAWN_SETSIGMASK) | Int32(POSIX_SPAWN_SETSIGDEF)
    if newProcessGroup {
      flags |= Int32(POSIX_SPAWN_SETPGROUP)
      posix_spawnattr_setpgroup(&attributes, 0)
    }
    if newSession { flags |= Int32(NEARBY_POSIX_SPAWN_SETSID) }
    posix_spawnattr_setflags(&attributes, Int16(flags))

    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    for (stream, target) in [(standardInput, Int32(0)), (standardOutput, 1), (standardError, 2)] {
      switch stream {
      case .inherit: break
      case .null: posix_spawn_file_actions_addopen(&actions, target, "/dev/null", target == 0 ? O_RDONLY : O_WRONLY, 0)
      case .descriptor(let fd): posix_spawn_file_actions_adddup2(&actions, fd, target)
      }
    }
    // Nothing else of ours leaks into the child, whatever forgot O_CLOEXEC: a pipe's write
    // end kept open by a child means its reader never sees the end of the stream.
    _ = nearby_spawn_actions_close_from(&actions, 3)

    let argv = ([executable] + arguments).map { strdup($0) } + [nil]
    defer { for pointer in argv { free(pointer) } }
    let environmentStrings: [UnsafeMutablePointer<CChar>?]? = environment.map { variables in
      variables.map { strdup("\($0.key)=\($0.value)") } + [nil]
    }
    defer { environmentStrings?.forEach { free($0) } }
    var pid = pid_t()
    let result: Int32 = argv.withUnsafeBufferPointer { args in
      if let environmentStrings {
        return environmentStrings.withUnsafeBufferPointer { env in
          posix_spawnp(&pid, executable, &actions, &attributes, args.baseAddress!, env.baseAddress!)
        }
      }
      return posix_spawnp(&pid, executable, &actions, &attributes, args.baseAddress!, environ)
    }
    guard result == 0 else { throw SystemError("posix_spawn(\(executable))", errno: result) }
    self.pid = pid
    self.reaper = Reaper(pid: pid)
    reaper.start()
  }

  /// Sends `signal` (SIGTERM by default) to the child, or to its process group.
  public func terminate(_ signal: Int32 = SIGTERM, group: Bool = false) {
    // Not once reaped: the pid may belong to another process by then.
    guard reaper.status == nil else { return }
    _ = Glibc.kill(group ? -pid : pid, signal)
  }

  /// The exit status once the child has been reaped.
  public var exitStatus: Int32? { reaper.status }

  /// Waits for the child to end (its reaper thread waits; never the cooperative pool).
  /// - Returns: the exit code, or 128 + the signal number when a signal ended it (-1 if it
  ///   could not be reaped).
  @discardableResult
  public func wait() async -> Int32 {
    await withCheckedContinuation { continuation in reaper.notify(continuation) }
  }
}

/// Reaps one child on a thread of its own and hands its status to whoever waits, exactly
/// once each.
private final class Reaper: Sendable {
  let pid: pid_t
  private let state = Mutex<(status: Int32?, waiters: [CheckedContinuation<Int32, Never>])>((nil, []))

  init(pid: pid_t) { self.pid = pid }

  var status: Int32? { state.withLock { $0.status } }

  func start() {
    let box = Unmanaged.passRetained(self)
    var thread = pthread_t()
    let created = pthread_create(
      &thread, nil,
      { context in
        let reaper = Unmanaged<Reaper>.fromOpaque(context!).takeRetainedValue()
        var raw: Int32 = 0
        var result: pid_t
        repeat { result = waitpid(reaper.pid, &raw, 0) } while result < 0 && errno == EINTR
        let code: Int32
        if result < 0 {
          code = -1
        } else if raw & 0x7F == 0 {
          code = (raw >> 8) & 0xFF
        } else {
          code = 128 + (raw & 0x7F)
        }
        reaper.finish(code)
        return nil
      }, box.toOpaque())
    if created == 0 {
      pthread_detach(thread)
    } else {
      box.release()
      finish(-1)
    }
  }

  func notify(_ continuation: CheckedContinuation<Int32, Never>) {
    let known = state.withLock { state -> Int32? in
      if state.status == nil { state.waiters.append(continuation) }
      return state.status
    }
    if let known { continuation.resume(returning: known) }
  }

  private func finish(_ code: Int32) {
    let waiters = state.withLock { state -> [CheckedContinuation<Int32, Never>] in
      state.status = code
      defer { state.waiters = [] }
      return state.waiters
    }
    for waiter in waiters { waiter.resume(returning: code) }
  }
}
