import CNearbySystem
import Foundation
import NearbyCore
import NearbyLab
import NearbyTestSupport
import NearbyTransport
import Synchronization
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// Collects transport events and hands them out by predicate; events that no caller
/// matched yet stay buffered, so waiting for one kind never loses another.
final class EventCollector: Sendable {
  private let buffer = Mutex<[TransportEvent]>([])
  let counter = Atomic<UInt64>(1)

  init() {}

  var sink: TransportSink {
    { [self] event in buffer.withLock { $0.append(event) } }
  }

  /// Every event buffered and not taken yet.
  var all: [TransportEvent] { buffer.withLock { $0 } }

  var nextID: @Sendable () -> ConnectionID {
    { [self] in ConnectionID(self.counter.add(1, ordering: .relaxed).newValue) }
  }

  /// Waits for the first buffered or future event `match` accepts, failing after `timeout`.
  func next<T: Sendable>(within timeout: Duration = .seconds(5), _ match: @escaping @Sendable (TransportEvent) -> T?) async throws -> T {
    let deadline = ContinuousClock.now + timeout
    while true {
      let found = buffer.withLock { events -> T? in
        for (index, event) in events.enumerated() {
          if let value = match(event) {
            events.remove(at: index)
            return value
          }
        }
        return nil
      }
      if let found { return found }
      if ContinuousClock.now >= deadline { throw TimeoutError(what: "no matching transport event within \(timeout)") }
      try await Task.sleep(for: .milliseconds(2))
    }
  }
}

struct TimeoutError: Error, CustomStringConvertible {
  let what: String
  var description: String { what }
}

/// A blocking raw TCP client for poking at the listener with arbitrary bytes (run off the
/// cooperative pool by doing only short, bounded operations).
final class RawClient: @unchecked Sendable {
  let fd: Int32

  init(port: UInt16) throws {
    fd = try LoopbackSocket.connected(to: port)
    var timeout = timeval(tv_sec: 5, tv_usec: 0)
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
  }

  func write(_ bytes: [UInt8]) {
    _ = bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
  }

  /// Reads until EOF (or the 5 s receive timeout).
  func readAll() -> [UInt8] {
    var result: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 65536)
    while true {
      let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
      if count <= 0 { break }
      result.append(contentsOf: buffer[0..<count])
    }
    return result
  }

  func shutdownWrite() { shutdown(fd, Int32(SHUT_WR)) }

  deinit { close(fd) }
}

/// Decodes a whole byte stream into frames (for checking what a peer received).
func frames(in bytes: [UInt8]) -> [Frame] {
  let decoder = FrameDecoder()
  decoder.append(bytes)
  var result: [Frame] = []
  while let frame = try? decoder.next() { result.append(frame) }
  return result
}

/// The open descriptors of the kinds the transport makes: sockets, epoll instances and
/// eventfds. Not all descriptors: the test library and the concurrency runtime open and close
/// others (pipes, files, timerfds) at moments a test does not control.
func openFileDescriptors() -> Int {
  guard let dir = opendir("/proc/self/fd") else { return Int(nearby_open_fd_count()) }
  defer { closedir(dir) }
  let own = dirfd(dir)
  var count = 0
  while let entry = readdir(dir) {
    let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
    guard let fd = Int32(name), fd != own else { continue }
    var target = [CChar](repeating: 0, count: 256)
    let length = readlink("/proc/self/fd/\(name)", &target, target.count - 1)
    guard length > 0 else { continue }
    let kind = String(decoding: target.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    if kind.hasPrefix("socket:") || kind == "anon_inode:[eventpoll]" || kind == "anon_inode:[eventfd]" { count += 1 }
  }
  return count
}

/// The number of threads of this process whose name starts with `prefix` (all if empty).
func threadCount(named prefix: String = "") -> Int {
  threadsOfThisProcess().filter { $0.name.hasPrefix(prefix) }.count
}

/// The scheduler states (`R` running or runnable, `S` sleeping, ...) of this process's
/// threads named exactly `name`.
func threadStates(named name: String) -> [Character] {
  threadsOfThisProcess().filter { $0.name == name }.map(\.state)
}

/// This process's threads: name and scheduler state, from `/proc/self/task/*/stat`.
func threadsOfThisProcess() -> [(name: String, state: Character)] {
  var threads: [(name: String, state: Character)] = []
  guard let dir = opendir("/proc/self/task") else { return threads }
  defer { closedir(dir) }
  while let entry = readdir(dir) {
    let task = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
    guard Int(task) != nil, let file = fopen("/proc/self/task/\(task)/stat", "r") else { continue }
    defer { fclose(file) }
    var buffer = [CChar](repeating: 0, count: 512)
    guard fgets(&buffer, 512, file) != nil else { continue }
    let line = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    // "TID (NAME) STATE ...": the name may hold spaces and parentheses; the state follows the last ')'.
    guard let open = line.firstIndex(of: "("), let close = line.lastIndex(of: ")") else { continue }
    guard let state = line[line.index(after: close)...].first(where: { $0 != " " }) else { continue }
    threads.append((String(line[line.index(after: open)..<close]), state))
  }
  return threads
}

/// Samples ``threadStates(named:)`` every `interval` from `start + from` until `start + until`,
/// on a thread started at once: a loaded test run can starve the cooperative pool (where a
/// child task would start the sampling) for longer than the window being sampled.
final class ThreadStateSampler: Sendable {
  private final class Storage: Sendable {
    let states = Mutex<[Character]?>(nil)
  }
  private let storage = Storage()

  init(named name: String, after start: ContinuousClock.Instant, from: Duration, until: Duration, every interval: Duration = .milliseconds(10)) {
    let storage = self.storage
    let thread = Thread {
      var sampled: [Character] = []
      while ContinuousClock.now < start + from { usleep(1000) }
      while ContinuousClock.now < start + until {
        sampled += threadStates(named: name)
        usleep(UInt32(interval / .microseconds(1)))
      }
      storage.states.withLock { $0 = sampled }
    }
    thread.start()
  }

  /// The states, once the window is over.
  func result() async throws -> [Character] {
    while true {
      if let done = storage.states.withLock({ $0 }) { return done }
      try await Task.sleep(for: .milliseconds(10))
    }
  }
}
