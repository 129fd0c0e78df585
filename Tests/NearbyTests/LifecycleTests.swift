import Dispatch
import NearbyCore
import Synchronization
import Testing

@testable import Nearby

#if canImport(Glibc)
  import Glibc
#endif

/// Starting and ending: what fails to start still ends what waits for it, and what is dropped
/// unused leaves no thread behind.
@Suite("Session, browser and advertiser life cycles")
struct LifecycleTests {
  /// A TCP listener on 127.0.0.1 holding a port, so that a session cannot listen there.
  final class OccupiedPort: Sendable {
    let fd: Int32
    let port: UInt16

    init() throws {
      let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
      var address = sockaddr_in()
      address.sin_family = sa_family_t(AF_INET)
      address.sin_addr.s_addr = inet_addr("127.0.0.1")
      var length = socklen_t(MemoryLayout<sockaddr_in>.size)
      let bound = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && listen(fd, 1) == 0 && getsockname(fd, $0, &length) == 0 }
      }
      self.fd = fd
      port = UInt16(bigEndian: address.sin_port)
      try #require(bound, "could not listen on 127.0.0.1")
    }

    deinit { close(fd) }
  }

  final class Flag: Sendable {
    let value = Atomic<Bool>(false)
    var isSet: Bool { value.load(ordering: .relaxed) }
    func set() { value.store(true, ordering: .relaxed) }
  }

  /// `shutdown()` asked while `run()` starts a listener that then fails returns when `run()`
  /// does (it waited for ever: only a session that ran resumed the callers of `shutdown()`).
  @Test func aShutdownAskedWhileTheListenerFailsToStartReturns() async throws {
    let occupied = try OccupiedPort()
    var configuration = SessionConfiguration(identity: .ephemeral(), name: try DisplayName("alice"))
    configuration.advertise = false
    configuration.browse = false
    configuration.listenHost = "127.0.0.1"
    configuration.listenPort = occupied.port
    let session = try NearbySession(configuration: configuration)
    // Both calls queue on the session's executor (its I/O thread, held here), `run()` first:
    // `shutdown()` then runs while `run()` waits for its listener.
    let hold = DispatchSemaphore(value: 0)
    session.loop.execute { hold.wait() }
    let run = Task { try await session.run() }
    try await Task.sleep(for: .milliseconds(100))
    let returned = Flag()
    let stop = Task {
      await session.shutdown()
      returned.set()
    }
    try await Task.sleep(for: .milliseconds(100))
    hold.signal()
    await #expect(throws: SystemError.self) { try await run.value }
    // A shutdown() never resumed stays suspended: look for a while rather than hang the run.
    for _ in 0..<200 where !returned.isSet { try await Task.sleep(for: .milliseconds(50)) }
    #expect(returned.isSet, "shutdown() did not return after run() failed to start")
    if returned.isSet { await stop.value }
  }

  /// A browser whose I/O thread cannot start throws, and its event sequence ends (its readers
  /// waited for ever). In a child process: no descriptor is left to make one.
  @Test func aBrowserThatCannotStartEndsItsEvents() async {
    await #expect(processExitsWith: .success) {
      alarm(20)  // a reader that waits for ever ends the child with SIGALRM
      let browser = NearbyBrowser(serviceType: try ServiceType("_nearby-test._tcp"))
      var events = browser.events.makeAsyncIterator()
      var limit = rlimit(rlim_cur: 3, rlim_max: 1 << 16)
      guard getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0 else { exit(3) }
      limit.rlim_cur = 3
      guard setrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0 else { exit(4) }
      do {
        try await browser.run()
        exit(5)  // it started: nothing shown
      } catch {}
      guard await events.next() == nil else { exit(6) }
      exit(0)
    }
  }

  /// A session made and dropped without running stops its I/O thread. In a child process, so
  /// that no other test's sessions blur the count.
  @Test func aSessionDroppedWithoutRunningLeavesNoThreadBehind() async {
    await #expect(processExitsWith: .success) {
      alarm(20)
      func ioThreads() -> Int {
        guard let dir = opendir("/proc/self/task") else { return -1 }
        defer { closedir(dir) }
        var count = 0
        while let entry = readdir(dir) {
          let task = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
          guard Int(task) != nil, let file = fopen("/proc/self/task/\(task)/comm", "r") else { continue }
          var buffer = [CChar](repeating: 0, count: 32)
          if fgets(&buffer, 32, file) != nil,
            String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self).hasPrefix("nearby-io")
          {
            count += 1
          }
          fclose(file)
        }
        return count
      }
      let before = ioThreads()
      do {
        let session = try NearbySession(configuration: SessionConfiguration(identity: .ephemeral(), name: try DisplayName("unused")))
        // The thread names itself once it runs.
        for _ in 0..<200 where ioThreads() != before + 1 { usleep(10_000) }
        guard ioThreads() == before + 1 else { exit(3) }
        _ = session
      }
      for _ in 0..<200 where ioThreads() != before { try await Task.sleep(for: .milliseconds(25)) }
      exit(ioThreads() == before ? 0 : 4)
    }
  }
}
