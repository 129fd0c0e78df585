import Foundation
import NearbyCore
import NearbySystem
import NearbyTransport
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

private let debugFlag = ProcessInfo.processInfo.environment["NEARBY_TEST_DEBUG"] != nil

/// Facts about the private LAN the test run is in (see `scripts/lan`).
public enum LAN {
  /// Real Avahi is reachable: the tests run inside `scripts/lan loopback`.
  public static let avahiAvailable: Bool =
    ProcessInfo.processInfo.environment["NEARBY_AVAHI"] == "1" && FileManager.default.fileExists(atPath: "/run/avahi-daemon/socket")

  /// A service type no other test uses, so parallel tests do not see each other.
  public static func uniqueServiceType() -> ServiceType {
    try! ServiceType("t\(String(UInt32.random(in: 0...UInt32.max), radix: 16))")
  }
}

/// Buffers an AsyncStream's elements so tests can wait for one matching a predicate
/// without losing the others.
public final class Recorder<Element: Sendable>: Sendable {
  private final class Storage: Sendable {
    /// The elements, and how many were ever removed (a waiter that sees the count unchanged
    /// knows the elements it already looked at are where they were).
    let elements = Mutex<(list: [Element], removals: Int)>(([], 0))
  }
  private let storage = Storage()
  /// NEARBY_TEST_DEBUG=1 prints every recorded element (read once: the environment is slow to query).
  private static var debug: Bool { debugFlag }
  private let task: Task<Void, Never>

  public init<S: AsyncSequence & Sendable>(_ stream: S) where S.Element == Element, S.Failure == Never {
    let storage = self.storage
    task = Task {
      for await element in stream {
        if Self.debug { print("[recorder] \(ContinuousClock.now) \(element)") }
        storage.elements.withLock { $0.list.append(element) }
      }
    }
  }

  deinit { task.cancel() }

  public var all: [Element] { storage.elements.withLock { $0.list } }

  /// Waits for (and removes) the first element `match` accepts.
  public func next<T: Sendable>(within timeout: Duration = .seconds(10), _ what: String = "event", _ match: @escaping @Sendable (Element) -> T?)
    async throws -> T
  {
    let deadline = ContinuousClock.now + timeout
    // Each poll looks only at what arrived since the last one, unless something was removed
    // meanwhile (a flood of 16 000 events scanned whole every 10 ms held the lock the
    // recorder appends under for milliseconds at a time).
    var scanned = 0
    var removalsSeen = -1
    while true {
      let found = storage.elements.withLock { elements -> T? in
        if elements.removals != removalsSeen { scanned = 0 }
        for index in scanned..<elements.list.count {
          if let value = match(elements.list[index]) {
            elements.list.remove(at: index)
            elements.removals += 1
            return value
          }
        }
        scanned = elements.list.count
        removalsSeen = elements.removals
        return nil
      }
      if let found { return found }
      if ContinuousClock.now >= deadline {
        throw WaitError(description: "no \(what) within \(timeout); seen: \(all)")
      }
      try await Task.sleep(for: .milliseconds(10))
    }
  }
}

public struct WaitError: Error, CustomStringConvertible {
  public let description: String
  public init(description: String) { self.description = description }
}

/// Runs `body`; if it takes longer than `limit`, cancels it and throws ``WaitError`` naming
/// `what` (with `diagnose()`'s words), so that a wait that never ends fails the test instead of
/// holding the whole run. It does not wait for a `body` that ignores its cancellation (a task
/// group would: a test once sat for minutes after its limit, waiting for a body that never
/// ended), and gives `diagnose()` 10 s of its own.
public func within<T: Sendable>(
  _ limit: Duration, _ what: String, diagnose: @escaping @Sendable () async -> String = { "" },
  _ body: @escaping @Sendable () async throws -> T
) async throws -> T {
  let outcome = await firstOf(limit) { try await body() }
  switch outcome {
  case .finished(let result): return try result.get()
  case .timedOut:
    let words: String
    switch await firstOf(.seconds(10), { await diagnose() }) {
    case .finished(let result): words = (try? result.get()) ?? ""
    case .timedOut: words = "(the diagnosis itself did not answer within 10 s)"
    }
    throw WaitError(description: "\(what) did not end within \(limit) \(words)")
  }
}

/// How a race between some work and a limit ended.
enum RaceOutcome<T: Sendable>: Sendable {
  case finished(Result<T, any Error>)
  case timedOut
}

/// Runs `work` in a task of its own and returns its outcome, or `.timedOut` once `limit`
/// has passed (cancelling it, without waiting for it to end).
func firstOf<T: Sendable>(_ limit: Duration, _ work: @escaping @Sendable () async throws -> T) async -> RaceOutcome<T> {
  let race = Race<T>()
  // Cancelling the caller cancels the work (and the timer), as a task group would.
  return await withTaskCancellationHandler {
    await withCheckedContinuation { continuation in
      race.start(continuation, limit: limit, work)
    }
  } onCancel: {
    race.cancel()
  }
}

/// The state of ``firstOf(_:_:)``: whoever ends first resumes the waiter, once.
private final class Race<T: Sendable>: Sendable {
  private let state = Mutex<(waiter: CheckedContinuation<RaceOutcome<T>, Never>?, tasks: [Task<Void, Never>])>((nil, []))

  func start(_ waiter: CheckedContinuation<RaceOutcome<T>, Never>, limit: Duration, _ work: @escaping @Sendable () async throws -> T) {
    state.withLock { $0.waiter = waiter }
    let worker = Task {
      let result: Result<T, any Error>
      do { result = .success(try await work()) } catch { result = .failure(error) }
      self.finish(.finished(result))
    }
    let timer = Task {
      guard (try? await Task.sleep(for: limit)) != nil else { return }
      self.finish(.timedOut)
    }
    // Either may have finished already, before the other existed: it found nothing to cancel.
    let finished = state.withLock { state in
      state.tasks = [worker, timer]
      return state.waiter == nil
    }
    if finished {
      worker.cancel()
      timer.cancel()
    }
  }

  /// Cancels the work and the timer (the waiter is resumed by whichever ends).
  func cancel() {
    for task in state.withLock({ $0.tasks }) { task.cancel() }
  }

  private func finish(_ outcome: RaceOutcome<T>) {
    let (waiter, tasks) = state.withLock { state in
      defer { state.waiter = nil }
      return (state.waiter, state.tasks)
    }
    guard let waiter else { return }
    for task in tasks { task.cancel() }
    waiter.resume(returning: outcome)
  }
}

/// Runs a command to completion and returns its exit status and combined output.
/// The child runs with signals unblocked (``ChildProcess``) and is killed on timeout. Output
/// is read while it runs; once it has exited, whatever its own children (daemons that keep
/// the pipe open) write is not waited for.
public func run(_ arguments: [String], timeout: Duration = .seconds(20)) async throws -> (status: Int32, output: String) {
  let output = try OutputCapture()
  let child = try ChildProcess(
    arguments[0], Array(arguments.dropFirst()), standardInput: .null, standardOutput: .descriptor(output.writeFD),
    standardError: .descriptor(output.writeFD))
  output.closeWriteEnd()
  let reading = Task { await output.read() }
  let watchdog = Task {
    try await Task.sleep(for: timeout)
    child.terminate(SIGKILL)
  }
  let status = await child.wait()
  let timedOut = !watchdog.isCancelled && status == 128 + SIGKILL
  watchdog.cancel()
  output.childExited()
  let text = await reading.value
  if timedOut {
    throw WaitError(description: "\(arguments.joined(separator: " ")) did not finish within \(timeout): \(text)")
  }
  return (status, text)
}

/// A pipe whose read end is drained on a thread of its own.
public final class OutputCapture: @unchecked Sendable {
  public let readFD: Int32
  public let writeFD: Int32
  private var writeOpen = true
  private let exited = Atomic<Bool>(false)

  public init() throws {
    var fds: [Int32] = [0, 0]
    guard pipe(&fds) == 0 else { throw WaitError(description: "pipe failed") }
    readFD = fds[0]
    writeFD = fds[1]
    _ = fcntl(readFD, F_SETFD, FD_CLOEXEC)
  }

  public func closeWriteEnd() {
    if writeOpen {
      close(writeFD)
      writeOpen = false
    }
  }

  /// The writer has exited: stop at EOF or after 200 ms without data.
  public func childExited() { exited.store(true, ordering: .releasing) }

  /// Reads until EOF, or until the writer has exited and nothing more comes (off the pool).
  public func read() async -> String {
    let fd = readFD
    return await withCheckedContinuation { continuation in
      Thread.detachNewThread { [self] in
        var data: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        var quietSince: UInt64 = 0
        while true {
          var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
          let ready = poll(&descriptor, 1, 50)
          if ready == 0 {
            if exited.load(ordering: .acquiring) {
              quietSince += 50
              if quietSince >= 200 { break }
            }
            continue
          }
          if ready < 0 {
            if errno == EINTR { continue }
            break
          }
          let count = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
          if count < 0 && errno == EINTR { continue }
          if count <= 0 { break }
          quietSince = 0
          data.append(contentsOf: buffer[0..<count])
        }
        close(fd)
        continuation.resume(returning: String(decoding: data, as: UTF8.self))
      }
    }
  }
}
