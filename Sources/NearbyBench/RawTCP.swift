import CNearbySystem
import NearbyCore
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// Blocking-socket baselines: what plain TCP does with the same bytes. They block, so their
/// callers run them on threads of their own (``Thread/offPool(_:)``), never on Swift's
/// cooperative pool.
enum RawTCP {
  /// A connected pair of blocking TCP sockets on loopback.
  static func pair() -> (Int32, Int32) {
    let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    withUnsafeMutablePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        _ = bind(listener, $0, length)
        _ = getsockname(listener, $0, &length)
      }
    }
    listen(listener, 1)
    let client = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { _ = connect(client, $0, length) }
    }
    let server = accept(listener, nil, nil)
    close(listener)
    var one: Int32 = 1
    for fd in [client, server] { setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size)) }
    return (client, server)
  }

  static func writeAll(_ fd: Int32, _ pointer: UnsafeRawPointer, _ count: Int) {
    var offset = 0
    while offset < count {
      let written = send(fd, pointer + offset, count - offset, Int32(MSG_NOSIGNAL))
      if written <= 0 { return }
      offset += written
    }
  }

  static func readExactly(_ fd: Int32, _ pointer: UnsafeMutableRawPointer, _ count: Int) -> Bool {
    var offset = 0
    while offset < count {
      let got = recv(fd, pointer + offset, count - offset, 0)
      if got <= 0 { return false }
      offset += got
    }
    return true
  }

  /// Ping-pong of `frame` (the bytes of one MESSAGE frame) between two threads of its own,
  /// as the two ends of a plain TCP program are (and as a session's two I/O threads are).
  /// With `cpus`, each end is pinned to its CPU. (The asking end used to be the calling
  /// thread, one of Swift's cooperative pool, blocked for the whole run.)
  /// `cpu` adds the process's CPU time over the round trips.
  static func pingPong(frame: [UInt8], rounds: Int, cpus: EndCPUs? = nil, cpu: CPUTally? = nil) async -> [RoundTrip] {
    await Thread.offPool {
      let start = CPUTally.processTime()
      let trips = pingPongOnThisThread(frame: frame, rounds: rounds, cpus: cpus)
      cpu?.add(CPUTally.processTime() - start, trips: trips.count)
      return trips
    }
  }

  /// ``pingPong(frame:rounds:cpus:)``, the calling thread asking (it blocks).
  private static func pingPongOnThisThread(frame: [UInt8], rounds: Int, cpus: EndCPUs?) -> [RoundTrip] {
    let (a, b) = pair()
    defer {
      close(a)
      close(b)
    }
    let echoCPU = EchoCPU()
    let echo = Thread {
      if let cpus { _ = nearby_pin_thread(cpus.answering) }
      var buffer = [UInt8](repeating: 0, count: frame.count)
      for _ in 0..<rounds {
        guard buffer.withUnsafeMutableBytes({ readExactly(b, $0.baseAddress!, $0.count) }) else { return }
        echoCPU.note()
        buffer.withUnsafeBytes { writeAll(b, $0.baseAddress!, $0.count) }
      }
    }
    echo.start()
    defer { echo.join() }
    if let cpus { _ = nearby_pin_thread(cpus.asking) }
    var trips: [RoundTrip] = []
    trips.reserveCapacity(rounds)
    var buffer = [UInt8](repeating: 0, count: frame.count)
    let clock = ContinuousClock()
    for _ in 0..<rounds {
      let start = clock.now
      frame.withUnsafeBytes { writeAll(a, $0.baseAddress!, $0.count) }
      _ = buffer.withUnsafeMutableBytes { readExactly(a, $0.baseAddress!, $0.count) }
      trips.append(RoundTrip(time: clock.now - start, sharedCPU: echoCPU.isCurrent))
    }
    return trips
  }

  /// What a one-way run took: the time from the first write to the last byte read, and the
  /// CPU time of the writing and of the reading thread (the kernel's work for each byte on
  /// either side, with whatever the loopback's receive path runs on the writer's CPU).
  struct OneWay {
    var elapsed: Duration
    var writerCPU: Duration
    var readerCPU: Duration
  }

  /// The calling thread's CPU time so far.
  static func threadCPUTime() -> Duration {
    var spec = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &spec)
    return .seconds(spec.tv_sec) + .nanoseconds(spec.tv_nsec)
  }

  /// One-way throughput: `count` frames, written one `send` per frame or in batches of
  /// `batchBytes`, read and counted (by their length prefixes) on the other side.
  static func oneWay(frame: [UInt8], count: Int, batchBytes: Int?) -> OneWay {
    let (a, b) = pair()
    defer {
      close(a)
      close(b)
    }
    let total = frame.count * count
    let clock = ContinuousClock()
    let start = clock.now
    let writerCPU = Mutex(Duration.zero)
    let writer = Thread {
      let cpuStart = threadCPUTime()
      defer { writerCPU.withLock { $0 = threadCPUTime() - cpuStart } }
      if let batchBytes {
        let perBatch = max(1, batchBytes / frame.count)
        var batch: [UInt8] = []
        batch.reserveCapacity(perBatch * frame.count)
        for _ in 0..<perBatch { batch.append(contentsOf: frame) }
        var sent = 0
        while sent < count {
          let n = min(perBatch, count - sent)
          batch.withUnsafeBytes { writeAll(a, $0.baseAddress!, n * frame.count) }
          sent += n
        }
      } else {
        frame.withUnsafeBytes { raw in
          for _ in 0..<count { writeAll(a, raw.baseAddress!, raw.count) }
        }
      }
    }
    writer.start()
    let readerStart = threadCPUTime()
    // Read and walk the frames (length prefixes), as a receiver must.
    var buffer = [UInt8](repeating: 0, count: 1 << 20)
    var received = 0
    var frames = 0
    var pending = 0  // bytes of the current frame still to skip
    var header: [UInt8] = []
    while received < total {
      let got = buffer.withUnsafeMutableBytes { recv(b, $0.baseAddress, $0.count, 0) }
      if got <= 0 { break }
      received += got
      var index = 0
      while index < got {
        if pending > 0 {
          let skip = min(pending, got - index)
          pending -= skip
          index += skip
          if pending == 0 { frames += 1 }
          continue
        }
        header.append(buffer[index])
        index += 1
        if header.count == 4 {
          pending = Int(header[0]) << 24 | Int(header[1]) << 16 | Int(header[2]) << 8 | Int(header[3])
          header.removeAll(keepingCapacity: true)
        }
      }
    }
    let elapsed = clock.now - start
    let readerCPU = threadCPUTime() - readerStart
    writer.join()
    precondition(frames == count, "raw TCP lost frames: \(frames) of \(count)")
    return OneWay(elapsed: elapsed, writerCPU: writerCPU.withLock { $0 }, readerCPU: readerCPU)
  }
}

/// A thread that can be joined (Foundation's Thread cannot).
final class Thread: @unchecked Sendable {
  private var thread = pthread_t()
  /// Whether ``start()`` made a thread that nobody joined or detached yet.
  private var joinable = false
  private let body: () -> Void
  init(_ body: @escaping () -> Void) { self.body = body }
  /// Starts the thread. The benchmark cannot go on without it: when none can be made, it
  /// stops with the reason (rather than wait for ever for a thread that never ran).
  func start() {
    let box = Unmanaged.passRetained(self)
    let started = pthread_create(
      &thread, nil,
      { context in
        let owner = Unmanaged<Thread>.fromOpaque(context!).takeRetainedValue()
        owner.body()
        return nil
      }, box.toOpaque())
    guard started == 0 else {
      box.release()
      fatalError("nearby bench: cannot start a thread: \(String(cString: strerror(started))) (errno \(started))")
    }
    joinable = true
  }
  /// Waits for the body to end.
  func join() {
    guard joinable else { return }
    joinable = false
    pthread_join(thread, nil)
  }

  /// Lets the thread end on its own: nobody will join it.
  func detach() {
    guard joinable else { return }
    joinable = false
    pthread_detach(thread)
  }

  /// Runs blocking work on a thread of its own, which ends with it (detached: nobody joins
  /// it), and returns its result: blocking one of Swift's cooperative threads (two here)
  /// would stall every task.
  static func offPool<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
      let thread = Thread { continuation.resume(returning: work()) }
      thread.start()
      thread.detach()
    }
  }

  /// ``offPool(_:)`` for work that throws.
  static func offPool<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    let result: Result<T, any Error> = await withCheckedContinuation { continuation in
      let thread = Thread { continuation.resume(returning: Result { try work() }) }
      thread.start()
      thread.detach()
    }
    return try result.get()
  }
}
