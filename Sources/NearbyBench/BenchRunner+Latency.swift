import CNearbySystem
import Nearby
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

extension BenchRunner {
  func latency() async throws -> [BenchmarkResult] {
    let rounds = quick ? 1000 : 10_000
    let blocks = 5
    progress(
      "latency: \(rounds) round trips of a 64-byte message each way (events on the session's executor; the same with busy polling; events in an ordinary task, without and with; raw TCP; on two CPUs, with one kept busy; everything pinned to one CPU), in \(blocks) interleaved blocks"
    )
    if let profile = getenv("NEARBY_BENCH_PROFILE"), String(cString: profile) == "latency" {
      // Profiling our side only: round trips with events on the session's executor
      // (NEARBY_BENCH_POLL=200: busy polling for up to 200 µs).
      let poll = getenv("NEARBY_BENCH_POLL").map { Duration.microseconds(Int64(atoi($0))) }
      let times = Percentiles(try await roundTrips(rounds, onSessionExecutor: true, busyPoll: poll))
      return [
        BenchmarkResult(
          name: "latency", figure: "round trip 64 B, p50", unit: "µs", ours: times.p50.microseconds, baseline: nil, baselineName: nil,
          higherIsBetter: false)
      ]
    }
    // Interleaved blocks, each with fresh threads and sockets: where the scheduler puts a pair
    // of threads changes round trips several-fold on a small virtual machine, and each side
    // should see the same mix of placements.
    let polling = Duration.microseconds(200)
    var onLoopTimes: [Duration] = []
    var pollingTimes: [Duration] = []
    var pooledTimes: [Duration] = []
    var pooledPollingTimes: [Duration] = []
    var rawTimes: [Duration] = []
    var sharingTimes: [Duration] = []
    var rawSharingTimes: [Duration] = []
    var pinnedTimes: [Duration] = []
    var rawPinnedTimes: [Duration] = []
    let rawFrame = frame(body: 64)
    for _ in 0..<blocks {
      onLoopTimes += try await roundTrips(rounds / blocks, onSessionExecutor: true)
      pollingTimes += try await roundTrips(rounds / blocks, onSessionExecutor: true, busyPoll: polling)
      pooledTimes += try await roundTrips(rounds / blocks, onSessionExecutor: false)
      pooledPollingTimes += try await roundTrips(rounds / blocks, onSessionExecutor: false, busyPoll: polling)
      rawTimes += RawTCP.pingPong(frame: rawFrame, rounds: rounds / blocks)
      // The same with one CPU kept busy by a thread that spins: on two CPUs the pair then
      // shares the other one, and a round trip costs CPU time rather than wake-ups.
      if Spinner.worthRunning {
        let spinner = Spinner()
        defer { spinner.stop() }  // also when a round trip fails: the thread must not spin on
        sharingTimes += try await roundTrips(rounds / blocks, onSessionExecutor: true)
        rawSharingTimes += RawTCP.pingPong(frame: rawFrame, rounds: rounds / blocks)
      }
      // Every thread of the process on CPU 0, and so both ends of each pair: a round trip
      // then costs exactly the CPU time of both ends, with no wake-up of an idle CPU.
      if Pinning.worthRunning, nearby_pin_process(0) == 0 {
        defer { _ = nearby_unpin_process() }  // also when a round trip fails
        pinnedTimes += try await roundTrips(rounds / blocks, onSessionExecutor: true)
        rawPinnedTimes += RawTCP.pingPong(frame: rawFrame, rounds: rounds / blocks)
      }
    }
    let onLoop = Percentiles(onLoopTimes)
    let polled = Percentiles(pollingTimes)
    let pooled = Percentiles(pooledTimes)
    let pooledPolled = Percentiles(pooledPollingTimes)
    let raw = Percentiles(rawTimes)
    func row(_ figure: String, _ ours: Duration, _ theirs: Duration) -> BenchmarkResult {
      BenchmarkResult(
        name: "latency", figure: figure, unit: "µs", ours: ours.microseconds, baseline: theirs.microseconds, baselineName: "raw TCP ping-pong",
        higherIsBetter: false)
    }
    return [
      row("round trip 64 B, p50", onLoop.p50, raw.p50), row("round trip 64 B, p99", onLoop.p99, raw.p99),
      row("round trip 64 B, max", onLoop.max, raw.max),
      row("round trip 64 B, p50, busy polling 200 µs", polled.p50, raw.p50),
      row("round trip 64 B, p99, busy polling 200 µs", polled.p99, raw.p99),
      row("round trip 64 B, p50, events in an ordinary task", pooled.p50, raw.p50),
      row("round trip 64 B, p99, events in an ordinary task", pooled.p99, raw.p99),
      row("round trip 64 B, p50, events in an ordinary task, busy polling 200 µs", pooledPolled.p50, raw.p50),
    ] + sharingRows(sharingTimes, rawSharingTimes) + pinnedRows(pinnedTimes, rawPinnedTimes)
  }

  /// Rows of the round trips with a CPU kept busy, next to raw TCP's under the same load
  /// (none on a machine with more than two CPUs, where a spinning thread changes nothing).
  private func sharingRows(_ ours: [Duration], _ raw: [Duration]) -> [BenchmarkResult] {
    comparedRows(ours, raw, "another thread spinning on a CPU", baseline: "raw TCP ping-pong, the same spinning thread")
  }

  /// Rows of the round trips with every thread pinned to one CPU, next to raw TCP's pinned
  /// the same way (none where pinning failed or there is one CPU).
  private func pinnedRows(_ ours: [Duration], _ raw: [Duration]) -> [BenchmarkResult] {
    comparedRows(ours, raw, "both ends pinned to one CPU", baseline: "raw TCP ping-pong, pinned the same way")
  }

  /// p50 and p99 of round trips measured under `condition`, each next to raw TCP's.
  private func comparedRows(_ ours: [Duration], _ raw: [Duration], _ condition: String, baseline: String) -> [BenchmarkResult] {
    guard !ours.isEmpty, !raw.isEmpty else { return [] }
    let ours = Percentiles(ours)
    let raw = Percentiles(raw)
    return [("p50", ours.p50, raw.p50), ("p99", ours.p99, raw.p99)].map { percentile, ours, raw in
      BenchmarkResult(
        name: "latency", figure: "round trip 64 B, \(percentile), \(condition)", unit: "µs", ours: ours.microseconds,
        baseline: raw.microseconds, baselineName: baseline, higherIsBetter: false)
    }
  }

  /// Round trips through the public API: A sends, B's event loop answers each message, A
  /// waits for the answer in its event sequence. With `onSessionExecutor`, both consume
  /// `events` in tasks that prefer their session's executor (the recommended way: no thread
  /// switch per event); otherwise in ordinary tasks on Swift's thread pool.
  /// `busyPoll` nil: the configuration's default.
  func roundTrips(_ rounds: Int, onSessionExecutor: Bool, busyPoll: Duration? = nil) async throws -> [Duration] {
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
}

/// Pinning the process to one CPU changes something only where there are several.
enum Pinning {
  static var worthRunning: Bool { sysconf(Int32(_SC_NPROCESSORS_ONLN)) > 1 }
}

/// A thread that spins until stopped, keeping one CPU busy.
final class Spinner: Sendable {
  private final class Flag: Sendable { let running = Atomic<Bool>(true) }
  private let flag = Flag()
  private let thread: Thread

  /// Only on two CPUs: the figure it gives is that of a pair of threads sharing one CPU.
  static var worthRunning: Bool { sysconf(Int32(_SC_NPROCESSORS_ONLN)) == 2 }

  init() {
    let flag = flag
    thread = Thread { while flag.running.load(ordering: .relaxed) {} }
    thread.start()
  }

  func stop() {
    flag.running.store(false, ordering: .relaxed)
    thread.join()
  }
}
