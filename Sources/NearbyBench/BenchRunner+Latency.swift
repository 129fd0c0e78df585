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
      "latency: \(rounds) round trips of a 64-byte message each way (events on the session's executor, with the default configuration's busy polling and without; events in an ordinary task, with and without; raw TCP; on two CPUs, with one kept busy; everything pinned to one CPU; each end pinned to a CPU of its own), in \(blocks) interleaved blocks"
    )
    if let profile = getenv("NEARBY_BENCH_PROFILE"), String(cString: profile) == "latency" {
      // Profiling our side only: round trips with events on the session's executor
      // (NEARBY_BENCH_POLL=0: no busy polling, 200: up to 200 µs, unset: the default;
      // NEARBY_BENCH_SEPARATE=1: each end's I/O thread on a CPU of its own).
      let poll = getenv("NEARBY_BENCH_POLL").map { Duration.microseconds(Int64(atoi($0))) }
      let separate = getenv("NEARBY_BENCH_SEPARATE").map { atoi($0) != 0 } ?? false
      let times = Percentiles(try await roundTrips(rounds, onSessionExecutor: true, busyPoll: poll, cpus: separate ? .separate : nil).map(\.time))
      return [
        BenchmarkResult(
          name: "latency", figure: "round trip 64 B, p50", unit: "µs", ours: times.p50.microseconds, baseline: nil, baselineName: nil,
          higherIsBetter: false)
      ]
    }
    // Interleaved blocks, each with fresh threads and sockets: where the scheduler puts a pair
    // of threads changes round trips several-fold on a small virtual machine, and each side
    // should see the same mix of placements.
    var onLoopTrips: [RoundTrip] = []
    var quietTrips: [RoundTrip] = []
    var pooledTimes: [Duration] = []
    var pooledQuietTimes: [Duration] = []
    var rawTrips: [RoundTrip] = []
    var sharingTimes: [Duration] = []
    var rawSharingTimes: [Duration] = []
    var pinnedTimes: [Duration] = []
    var rawPinnedTimes: [Duration] = []
    var separateTimes: [Duration] = []
    var rawSeparateTimes: [Duration] = []
    // The process's CPU time per round trip (both ends: all of it is in this process).
    let onLoopCPU = CPUTally()
    let quietCPU = CPUTally()
    let rawCPU = CPUTally()
    let rawFrame = frame(body: 64)
    for _ in 0..<blocks {
      onLoopTrips += try await roundTrips(rounds / blocks, onSessionExecutor: true, cpu: onLoopCPU)
      quietTrips += try await roundTrips(rounds / blocks, onSessionExecutor: true, busyPoll: .zero, cpu: quietCPU)
      pooledTimes += try await roundTrips(rounds / blocks, onSessionExecutor: false).map(\.time)
      pooledQuietTimes += try await roundTrips(rounds / blocks, onSessionExecutor: false, busyPoll: .zero).map(\.time)
      rawTrips += await RawTCP.pingPong(frame: rawFrame, rounds: rounds / blocks, cpu: rawCPU)
      // The same with one CPU kept busy by a thread that spins: on two CPUs the pair then
      // shares the other one, and a round trip costs CPU time rather than wake-ups.
      if Spinner.worthRunning {
        let spinner = Spinner()
        defer { spinner.stop() }  // also when a round trip fails: the thread must not spin on
        sharingTimes += try await roundTrips(rounds / blocks, onSessionExecutor: true).map(\.time)
        rawSharingTimes += await RawTCP.pingPong(frame: rawFrame, rounds: rounds / blocks).map(\.time)
      }
      // Every thread of the process on CPU 0, and so both ends of each pair: a round trip
      // then costs exactly the CPU time of both ends, with no wake-up of an idle CPU (and
      // no busy polling: a loop made on one CPU never polls).
      if Pinning.worthRunning, nearby_pin_process(0) == 0 {
        defer { _ = nearby_unpin_process() }  // also when a round trip fails
        pinnedTimes += try await roundTrips(rounds / blocks, onSessionExecutor: true).map(\.time)
        rawPinnedTimes += await RawTCP.pingPong(frame: rawFrame, rounds: rounds / blocks).map(\.time)
      }
      // Each end on a CPU of its own: every message wakes the other CPU, unless it polls.
      if Pinning.worthRunning {
        separateTimes += try await roundTrips(rounds / blocks, onSessionExecutor: true, cpus: .separate).map(\.time)
        rawSeparateTimes += await RawTCP.pingPong(frame: rawFrame, rounds: rounds / blocks, cpus: .separate).map(\.time)
      }
    }
    let onLoop = Percentiles(onLoopTrips.map(\.time))
    let quiet = Percentiles(quietTrips.map(\.time))
    let pooled = Percentiles(pooledTimes)
    let pooledQuiet = Percentiles(pooledQuietTimes)
    let raw = Percentiles(rawTrips.map(\.time))
    func row(_ figure: String, _ ours: Duration, _ theirs: Duration) -> BenchmarkResult {
      BenchmarkResult(
        name: "latency", figure: figure, unit: "µs", ours: ours.microseconds, baseline: theirs.microseconds, baselineName: "raw TCP ping-pong",
        higherIsBetter: false)
    }
    func share(_ figure: String, _ ours: [RoundTrip]) -> BenchmarkResult {
      BenchmarkResult(
        name: "latency", figure: figure, unit: "%", ours: Self.shareOnOneCPU(ours), baseline: Self.shareOnOneCPU(rawTrips),
        baselineName: "raw TCP ping-pong", higherIsBetter: true)
    }
    return [
      row("round trip 64 B, p50", onLoop.p50, raw.p50), row("round trip 64 B, p99", onLoop.p99, raw.p99),
      row("round trip 64 B, max", onLoop.max, raw.max),
      row("round trip 64 B, p50, busy polling off", quiet.p50, raw.p50),
      row("round trip 64 B, p99, busy polling off", quiet.p99, raw.p99),
      row("round trip 64 B, p50, events in an ordinary task", pooled.p50, raw.p50),
      row("round trip 64 B, p99, events in an ordinary task", pooled.p99, raw.p99),
      row("round trip 64 B, p50, events in an ordinary task, busy polling off", pooledQuiet.p50, raw.p50),
      row("CPU time per round trip, both ends (the first row)", onLoopCPU.perTrip, rawCPU.perTrip),
      row("CPU time per round trip, both ends, busy polling off", quietCPU.perTrip, rawCPU.perTrip),
      share("round trips of the first row with both ends on one CPU", onLoopTrips),
      share("round trips with both ends on one CPU, busy polling off", quietTrips),
    ] + sharingRows(sharingTimes, rawSharingTimes) + pinnedRows(pinnedTimes, rawPinnedTimes)
      + comparedRows(separateTimes, rawSeparateTimes, "both ends on separate CPUs", baseline: "raw TCP ping-pong, placed the same way")
  }

  /// The percentage of `trips` whose two ends ran on one CPU when the answer arrived.
  static func shareOnOneCPU(_ trips: [RoundTrip]) -> Double {
    trips.isEmpty ? 0 : (Double(trips.count { $0.sharedCPU }) * 1000 / Double(trips.count)).rounded() / 10
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
  /// `busyPoll` nil: the configuration's default. With `cpus` (only on the session's
  /// executor), each session's I/O thread is pinned to its CPU: A asks, B answers. `cpu`
  /// adds the process's CPU time over the measured round trips.
  func roundTrips(
    _ rounds: Int, onSessionExecutor: Bool, busyPoll: Duration? = nil, cpus: EndCPUs? = nil, cpu: CPUTally? = nil
  ) async throws -> [RoundTrip] {
    precondition(cpus == nil || onSessionExecutor, "only a session's own I/O thread may be pinned")
    let (a, b) = try await pair(busyPoll: busyPoll)
    let body = [UInt8](repeating: 0x62, count: 64)
    let aID = a.peer.id
    let bID = b.peer.id
    let bSession = b.session
    let aSession = a.session
    // Subscribed before the tasks start, so that no message can pass before they listen.
    let echoEvents = bSession.events.makeAsyncIterator()
    let measureEvents = aSession.events.makeAsyncIterator()
    let echoCPU = EchoCPU()
    let echo = Task(executorPreference: onSessionExecutor ? bSession.executor : nil) {
      // On B's I/O thread (the executor's), which ends with the session.
      if let cpus { _ = nearby_pin_thread(cpus.answering) }
      var events = echoEvents
      while let event = await events.next() {
        if case .message = event {
          echoCPU.note()
          _ = try? await bSession.send(body, to: .peer(aID))
        }
      }
    }
    let measure = Task(executorPreference: onSessionExecutor ? aSession.executor : nil) { () -> [RoundTrip] in
      if let cpus { _ = nearby_pin_thread(cpus.asking) }
      var events = measureEvents
      var trips: [RoundTrip] = []
      trips.reserveCapacity(rounds + 100)
      let clock = ContinuousClock()
      var cpuStart = Duration.zero
      for index in 0..<rounds + 100 {
        if index == 100 { cpuStart = CPUTally.processTime() }  // after the warm-up
        let start = clock.now
        _ = try? await aSession.send(body, to: .peer(bID))
        while let event = await events.next() {
          if case .message = event { break }
        }
        trips.append(RoundTrip(time: clock.now - start, sharedCPU: echoCPU.isCurrent))
      }
      cpu?.add(CPUTally.processTime() - cpuStart, trips: rounds)
      return trips
    }
    let trips = await measure.value
    echo.cancel()
    await a.stop()
    await b.stop()
    return Array(trips.dropFirst(100))
  }
}

/// One round trip: how long it took, and whether both ends ran on one CPU as it ended
/// (the one that answered when it answered, the one that asked when the answer came).
struct RoundTrip: Sendable {
  var time: Duration
  var sharedCPU: Bool
}

/// The CPUs the two ends of a ping-pong are pinned to.
struct EndCPUs: Sendable, Equatable {
  var asking: Int32
  var answering: Int32
  /// Each end on a CPU of its own: every message wakes the other CPU.
  static let separate = EndCPUs(asking: 0, answering: 1)
}

/// CPU time of the whole process over measured round trips, and how many there were.
final class CPUTally: Sendable {
  private let state = Mutex<(time: Duration, trips: Int)>((.zero, 0))

  func add(_ time: Duration, trips: Int) {
    state.withLock {
      $0.time += time
      $0.trips += trips
    }
  }

  /// Zero before any round trip.
  var perTrip: Duration { state.withLock { $0.trips == 0 ? .zero : $0.time / $0.trips } }

  /// The CPU time of every thread of this process so far.
  static func processTime() -> Duration {
    var spec = timespec()
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &spec)
    return .seconds(spec.tv_sec) + .nanoseconds(spec.tv_nsec)
  }
}

/// The CPU the answering end last ran on, for the asking end to compare with its own.
final class EchoCPU: Sendable {
  private let cpu = Atomic<Int32>(-1)
  /// Notes the calling thread's CPU.
  func note() { cpu.store(nearby_current_cpu(), ordering: .relaxed) }
  /// Whether the calling thread runs on the CPU last noted.
  var isCurrent: Bool { nearby_current_cpu() == cpu.load(ordering: .relaxed) }
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
