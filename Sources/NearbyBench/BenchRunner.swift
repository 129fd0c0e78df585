import CNearbySystem
import Nearby
import NearbyCore
import NearbySystem

#if canImport(Glibc)
  import Glibc
#endif

/// `nearby bench`: each figure of our stack next to a baseline measured in the same run.
public struct BenchRunner: Sendable {
  public let quick: Bool
  public let only: Set<String>
  /// Called with progress lines (stderr).
  public let progress: @Sendable (String) -> Void

  public init(quick: Bool, only: Set<String>, progress: @escaping @Sendable (String) -> Void) {
    self.quick = quick
    self.only = only
    self.progress = progress
  }

  func wants(_ name: String) -> Bool { only.isEmpty || only.contains(name) }

  public func run() async throws -> [BenchmarkResult] {
    var results: [BenchmarkResult] = []
    if only.contains("probe") {
      let transport = try await TransportProbe.pingPong(rounds: 5000)
      progress("probe: transport-only ping-pong p50 \(transport.p50.microseconds) µs, p99 \(transport.p99.microseconds) µs")
      let onLoops = try await TransportProbe.pingPongOnLoops(rounds: 10_000)
      progress("probe: transport-only ping-pong answered on the I/O threads p50 \(onLoops.p50.microseconds) µs, p99 \(onLoops.p99.microseconds) µs")
      let machine = try MachineProbe.nanosecondsPerMessage(count: 100_000)
      progress("probe: state machines alone, one 64 B message and its acknowledgement: \(Int(machine)) ns")
      let buffered = try await EventHubProbe.nanosecondsPerEvent(count: 200_000)
      let woken = try await EventHubProbe.nanosecondsPerWakeUp(count: 200_000)
      progress("probe: an event to a consumer on the session's executor: \(Int(buffered)) ns buffered, \(Int(woken)) ns when it waits")
    }
    // Memory first: the others leave freed heap behind that idle sessions would reuse,
    // which would make them look cheaper than they are.
    var memoryResults: [BenchmarkResult] = []
    if wants("memory") { memoryResults = try await memory() }
    if wants("latency") { results += try await latency() }
    if wants("throughput") { results += try await throughput() }
    if wants("handshake") { results += try await handshake() }
    if wants("fanout") { results += try await fanOut() }
    results += memoryResults
    if wants("discovery") { results += try await discovery() }
    return results
  }

  /// Two connected sessions.
  func pair(busyPoll: Duration = .zero) async throws -> (LocalSession, LocalSession) {
    let a = try await LocalSession.start("bench-a", busyPoll: busyPoll)
    let b = try await LocalSession.start("bench-b", busyPoll: busyPoll)
    var events = a.session.events.makeAsyncIterator()
    await a.session.invite(endpoints: [b.endpoint])
    while let event = await events.next() {
      if case .connected = event { break }
      if case .error(let error) = event { throw BenchError("could not connect: \(error)") }
    }
    return (a, b)
  }

  /// The bytes of one MESSAGE frame with a body of `size` bytes (for the raw baselines).
  func frame(body size: Int) -> [UInt8] {
    var bytes: [UInt8] = []
    FrameEncoder.encodeMessage(
      Frame.Message(id: 1, sender: PeerID.random(), timestamp: 0, recipients: [PeerID.random()], body: [UInt8](repeating: 0x61, count: size)),
      into: &bytes)
    return bytes
  }

  // MARK: 1. Latency

  func latency() async throws -> [BenchmarkResult] {
    let rounds = quick ? 1000 : 10_000
    let blocks = 5
    progress(
      "latency: \(rounds) round trips of a 64-byte message each way (events on the session's executor, with busy polling, events in an ordinary task, raw TCP), in \(blocks) interleaved blocks"
    )
    // Interleaved blocks, each with fresh threads and sockets: where the scheduler puts a pair
    // of threads changes round trips several-fold on a small virtual machine, and each side
    // should see the same mix of placements.
    var onLoopTimes: [Duration] = []
    var pollingTimes: [Duration] = []
    var pooledTimes: [Duration] = []
    var rawTimes: [Duration] = []
    let rawFrame = frame(body: 64)
    for _ in 0..<blocks {
      onLoopTimes += try await roundTrips(rounds / blocks, onSessionExecutor: true)
      pollingTimes += try await roundTrips(rounds / blocks, onSessionExecutor: true, busyPoll: .microseconds(200))
      pooledTimes += try await roundTrips(rounds / blocks, onSessionExecutor: false)
      rawTimes += RawTCP.pingPong(frame: rawFrame, rounds: rounds / blocks)
    }
    let onLoop = Percentiles(onLoopTimes)
    let polling = Percentiles(pollingTimes)
    let pooled = Percentiles(pooledTimes)
    let raw = Percentiles(rawTimes)
    func row(_ figure: String, _ ours: Duration, _ theirs: Duration) -> BenchmarkResult {
      BenchmarkResult(
        name: "latency", figure: figure, unit: "µs", ours: ours.microseconds, baseline: theirs.microseconds, baselineName: "raw TCP ping-pong",
        higherIsBetter: false)
    }
    return [
      row("round trip 64 B, p50", onLoop.p50, raw.p50), row("round trip 64 B, p99", onLoop.p99, raw.p99),
      row("round trip 64 B, max", onLoop.max, raw.max),
      row("round trip 64 B, p50, busy polling 200 µs", polling.p50, raw.p50),
      row("round trip 64 B, p99, busy polling 200 µs", polling.p99, raw.p99),
      row("round trip 64 B, p50, events in an ordinary task", pooled.p50, raw.p50),
      row("round trip 64 B, p99, events in an ordinary task", pooled.p99, raw.p99),
    ]
  }

  /// Round trips through the public API: A sends, B's event loop answers each message, A
  /// waits for the answer in its event sequence. With `onSessionExecutor`, both consume
  /// `events` in tasks that prefer their session's executor (the recommended way: no thread
  /// switch per event); otherwise in ordinary tasks on Swift's thread pool.
  func roundTrips(_ rounds: Int, onSessionExecutor: Bool, busyPoll: Duration = .zero) async throws -> [Duration] {
    let (a, b) = try await pair(busyPoll: busyPoll)
    let body = [UInt8](repeating: 0x62, count: 64)
    let aID = a.peer.id
    let bID = b.peer.id
    let bSession = b.session
    let aSession = a.session
    // Subscribed before the tasks start, so that no message can pass before they listen.
    let echoEvents = bSession.events.makeAsyncIterator()
    let measureEvents = aSession.events.makeAsyncIterator()
    let echo = Task(executorPreference: onSessionExecutor ? bSession.executor : nil) {
      var events = echoEvents
      while let event = await events.next() {
        if case .message = event { _ = try? await bSession.send(body, to: .peer(aID)) }
      }
    }
    let measure = Task(executorPreference: onSessionExecutor ? aSession.executor : nil) { () -> [Duration] in
      var events = measureEvents
      var times: [Duration] = []
      times.reserveCapacity(rounds + 100)
      let clock = ContinuousClock()
      for _ in 0..<rounds + 100 {
        let start = clock.now
        _ = try? await aSession.send(body, to: .peer(bID))
        while let event = await events.next() {
          if case .message = event { break }
        }
        times.append(clock.now - start)
      }
      return times
    }
    let times = await measure.value
    echo.cancel()
    await a.stop()
    await b.stop()
    return Array(times.dropFirst(100))
  }

  // MARK: 2. Throughput

  /// Sends `count` messages of `size` bytes from A to B; the time until B's application has
  /// taken the last one. Both sides run on their session's executor; the sender's `send`
  /// suspends whenever B's queue is full.
  func oneWay(size: Int, count: Int) async throws -> Duration {
    let (a, b) = try await pair()
    let body = [UInt8](repeating: 0x63, count: size)
    let bID = b.peer.id
    let aSession = a.session
    let bSession = b.session
    // A's own events (delivered) are consumed on its thread, so they do not pile up.
    let aliceEvents = aSession.events.makeAsyncIterator()
    let drain = Task(executorPreference: aSession.executor) {
      var events = aliceEvents
      while await events.next() != nil {}
    }
    let clock = ContinuousClock()
    let bobEvents = bSession.events.makeAsyncIterator()
    let arrived = Task(executorPreference: bSession.executor) { () -> ContinuousClock.Instant in
      var remaining = count
      var events = bobEvents
      while let event = await events.next() {
        if case .message = event {
          remaining -= 1
          if remaining == 0 { break }
        }
      }
      return clock.now
    }
    try await Task.sleep(for: .milliseconds(10))
    let start = clock.now
    let sender = Task(executorPreference: aSession.executor) {
      for _ in 0..<count { _ = try? await aSession.send(body, to: .peer(bID)) }
    }
    await sender.value
    let end = await arrived.value
    drain.cancel()
    await a.stop()
    await b.stop()
    return end - start
  }

  func throughput() async throws -> [BenchmarkResult] {
    let smallCount = quick ? 100_000 : 1_000_000
    let largeCount = quick ? 1000 : 10_000
    progress("throughput: \(smallCount) messages of 64 B, \(largeCount) of 64 KiB")
    let small = try await oneWay(size: 64, count: smallCount)
    if getenv("NEARBY_BENCH_PROFILE") != nil {
      // Profiling our side only: no baselines, no large messages.
      return [
        BenchmarkResult(
          name: "throughput", figure: "64 B messages one way", unit: "msg/s", ours: Double(smallCount) / small.seconds, baseline: nil,
          baselineName: nil, higherIsBetter: true)
      ]
    }
    let smallFrame = frame(body: 64)
    let rawSmall = RawTCP.oneWay(frame: smallFrame, count: smallCount, batchBytes: nil)
    let rawSmallBatched = RawTCP.oneWay(frame: smallFrame, count: smallCount, batchBytes: 1 << 20)
    let large = try await oneWay(size: 65_536, count: largeCount)
    let largeFrame = frame(body: 65_536)
    let rawLargeBatched = RawTCP.oneWay(frame: largeFrame, count: largeCount, batchBytes: 1 << 20)
    let rawLarge = RawTCP.oneWay(frame: largeFrame, count: largeCount, batchBytes: nil)
    func rate(_ count: Int, _ time: Duration) -> Double { Double(count) / time.seconds }
    func megabytes(_ count: Int, _ time: Duration) -> Double { Double(count * 65_536) / time.seconds / 1e6 }
    return [
      BenchmarkResult(
        name: "throughput", figure: "64 B messages one way", unit: "msg/s", ours: rate(smallCount, small), baseline: rate(smallCount, rawSmall),
        baselineName: "raw TCP, one write per message", higherIsBetter: true),
      BenchmarkResult(
        name: "throughput", figure: "64 B messages one way", unit: "msg/s", ours: rate(smallCount, small),
        baseline: rate(smallCount, rawSmallBatched), baselineName: "raw TCP, 1 MiB writes", higherIsBetter: true),
      BenchmarkResult(
        name: "throughput", figure: "64 KiB messages one way", unit: "MB/s", ours: megabytes(largeCount, large),
        baseline: megabytes(largeCount, rawLargeBatched), baselineName: "raw TCP, 1 MiB writes", higherIsBetter: true),
      BenchmarkResult(
        name: "throughput", figure: "64 KiB messages one way", unit: "MB/s", ours: megabytes(largeCount, large),
        baseline: megabytes(largeCount, rawLarge), baselineName: "raw TCP, one write per message", higherIsBetter: true),
    ]
  }

  // MARK: 3. Handshake

  func handshake() async throws -> [BenchmarkResult] {
    let rounds = quick ? 50 : 300
    progress("handshake: \(rounds) sessions (connect, HELLO, invitation accepted)")
    let a = try await LocalSession.start("bench-a")
    let b = try await LocalSession.start("bench-b")
    var events = a.session.events.makeAsyncIterator()
    let drain = Task { for await _ in b.session.events {} }
    var times: [Duration] = []
    let clock = ContinuousClock()
    for _ in 0..<rounds {
      let start = clock.now
      await a.session.invite(endpoints: [b.endpoint])
      while let event = await events.next() {
        if case .connected = event { break }
      }
      times.append(clock.now - start)
      await a.session.leave(b.peer.id)
      while let event = await events.next() {
        if case .disconnected = event { break }
      }
    }
    drain.cancel()
    await a.stop()
    await b.stop()
    // Baseline: a bare TCP connect + accept on loopback.
    var connects: [Duration] = []
    for _ in 0..<rounds {
      let start = clock.now
      let (x, y) = RawTCP.pair()
      connects.append(clock.now - start)
      close(x)
      close(y)
    }
    let ours = Percentiles(times)
    let raw = Percentiles(connects)
    return [
      BenchmarkResult(
        name: "handshake", figure: "invite → connected, p50", unit: "µs", ours: ours.p50.microseconds, baseline: raw.p50.microseconds,
        baselineName: "raw TCP connect+accept", higherIsBetter: false),
      BenchmarkResult(
        name: "handshake", figure: "invite → connected, p99", unit: "µs", ours: ours.p99.microseconds, baseline: raw.p99.microseconds,
        baselineName: "raw TCP connect+accept", higherIsBetter: false),
    ]
  }

  // MARK: 4. Fan-out

  func fanOut() async throws -> [BenchmarkResult] {
    let count = 100
    let repeats = quick ? 5 : 30
    progress("fan-out: one message to \(count) peers, \(repeats) times")
    let hub = try await LocalSession.start("hub")
    var peers: [LocalSession] = []
    for index in 0..<count { peers.append(try await LocalSession.start("p\(index)")) }
    var hubEvents = hub.session.events.makeAsyncIterator()
    for peer in peers { await hub.session.invite(endpoints: [peer.endpoint]) }
    var connected = 0
    while connected < count, let event = await hubEvents.next() {
      if case .connected = event { connected += 1 }
    }
    let hubDrain = Task { while await hubEvents.next() != nil {} }
    let arrivals = ArrivalCounter()
    let listeners = peers.map { peer in
      Task {
        for await event in peer.session.events {
          if case .message = event { arrivals.arrived() }
        }
      }
    }
    var times: [Duration] = []
    let clock = ContinuousClock()
    let body = [UInt8](repeating: 0x64, count: 64)
    for _ in 0..<repeats {
      arrivals.reset(expecting: count)
      let start = clock.now
      _ = try? await hub.session.send(body, to: .all)
      await arrivals.waitForAll()
      times.append(clock.now - start)
    }
    for listener in listeners { listener.cancel() }
    hubDrain.cancel()
    await hub.stop()
    for peer in peers { await peer.stop() }
    // Baseline: the same frame written to 100 raw sockets one after another, until the last
    // reader has it.
    var rawTimes: [Duration] = []
    let bytes = frame(body: 64)
    let pairs = (0..<count).map { _ in RawTCP.pair() }
    for _ in 0..<repeats {
      let start = clock.now
      let readers = pairs.map { pair in
        Thread {
          var buffer = [UInt8](repeating: 0, count: bytes.count)
          _ = buffer.withUnsafeMutableBytes { RawTCP.readExactly(pair.1, $0.baseAddress!, $0.count) }
        }
      }
      for reader in readers { reader.start() }
      let sendStart = clock.now
      for pair in pairs { bytes.withUnsafeBytes { RawTCP.writeAll(pair.0, $0.baseAddress!, $0.count) } }
      for reader in readers { reader.join() }
      rawTimes.append(clock.now - sendStart)
      _ = start
    }
    for pair in pairs {
      close(pair.0)
      close(pair.1)
    }
    return [
      BenchmarkResult(
        name: "fanout", figure: "64 B to \(count) peers, last arrival, p50", unit: "µs", ours: Percentiles(times).p50.microseconds,
        baseline: Percentiles(rawTimes).p50.microseconds, baselineName: "raw TCP, \(count) writes", higherIsBetter: false)
    ]
  }

  // MARK: 5. Memory

  func memory() async throws -> [BenchmarkResult] {
    let count = 200
    progress("memory: one session holding \(count) idle sessions (peers in a child process)")
    let hub = try await LocalSession.start("hub")
    let drain = Task { for await _ in hub.session.events {} }
    try await Task.sleep(for: .milliseconds(200))
    let before = nearby_resident_bytes()
    guard let executable = BenchRunner.executablePath() else { throw BenchError("cannot find the nearby executable for the peer process") }
    let child = try ChildProcess(
      executable, ["bench"], environment: ["NEARBY_BENCH_PEERS": "\(count):\(hub.port)", "PATH": "/usr/bin:/bin"], standardInput: .null,
      standardOutput: .descriptor(2), standardError: .inherit)
    // Wait until all are connected.
    var connected = 0
    let started = ContinuousClock.now
    for attempt in 0..<2400 {
      connected = await hub.session.connectedPeers.count
      if connected >= count { break }
      if attempt % 100 == 99 { progress("memory: \(connected) of \(count) connected after \(ContinuousClock.now - started)") }
      try await Task.sleep(for: .milliseconds(50))
    }
    guard connected >= count else {
      child.terminate(SIGKILL)
      throw BenchError("only \(connected) of \(count) peers connected")
    }
    // Let heartbeats and buffers settle.
    try await Task.sleep(for: .seconds(quick ? 1 : 3))
    let after = nearby_resident_bytes()
    child.terminate()
    _ = await child.wait()
    drain.cancel()
    await hub.stop()
    let perSession = Double(after - before) / Double(count) / 1024
    return [
      BenchmarkResult(
        name: "memory", figure: "resident memory per idle session", unit: "KiB", ours: perSession, baseline: nil, baselineName: nil,
        higherIsBetter: false)
    ]
  }

  /// The hidden peer-process mode of the memory benchmark: `count` sessions in this process,
  /// each inviting the hub at `port`, kept until SIGTERM.
  public static func runPeerProcess(_ specification: String) async -> Int32 {
    let parts = specification.split(separator: ":")
    guard parts.count == 2, let count = Int(parts[0]), let port = UInt16(parts[1]) else { return 64 }
    var sessions: [LocalSession] = []
    // A few at a time, so the hub never has many handshakes at once (it refuses beyond 64).
    let verbose = getenv("NEARBY_BENCH_VERBOSE") != nil
    for index in 0..<count {
      let t0 = ContinuousClock.now
      guard let session = try? await LocalSession.start("peer\(index)") else { return 1 }
      let t1 = ContinuousClock.now
      sessions.append(session)
      await session.session.invite(endpoints: [Endpoint(host: "127.0.0.1", port: port)])
      defer { if verbose { print("peer \(index): start \(t1 - t0), connect \(ContinuousClock.now - t1)") } }
      for await event in session.session.events {
        if case .connected = event { break }
        if case .error(let error) = event {
          print("bench peer \(index): \(error)")
          return 1
        }
        if case .disconnected(_, let reason) = event {
          print("bench peer \(index): disconnected: \(reason)")
          return 1
        }
      }
      let drain = Task { for await _ in session.session.events {} }
      _ = drain
    }
    while true { try? await Task.sleep(for: .seconds(3600)) }
  }

  static func executablePath() -> String? {
    var buffer = [CChar](repeating: 0, count: 4096)
    let length = readlink("/proc/self/exe", &buffer, buffer.count - 1)
    guard length > 0 else { return nil }
    return String(decoding: buffer[0..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
  }
}

/// Counts arrivals across tasks and lets one waiter know when all have arrived.
final class ArrivalCounter: @unchecked Sendable {
  private var lock = pthread_mutex_t()
  private var remaining = 0
  private var waiter: CheckedContinuation<Void, Never>?

  init() { pthread_mutex_init(&lock, nil) }

  func reset(expecting count: Int) {
    pthread_mutex_lock(&lock)
    remaining = count
    pthread_mutex_unlock(&lock)
  }

  func arrived() {
    pthread_mutex_lock(&lock)
    remaining -= 1
    var resume: CheckedContinuation<Void, Never>?
    if remaining == 0 {
      resume = waiter
      waiter = nil
    }
    pthread_mutex_unlock(&lock)
    resume?.resume()
  }

  func waitForAll() async {
    await withCheckedContinuation { continuation in
      pthread_mutex_lock(&lock)
      if remaining <= 0 {
        pthread_mutex_unlock(&lock)
        continuation.resume()
      } else {
        waiter = continuation
        pthread_mutex_unlock(&lock)
      }
    }
  }
}
