import Nearby
import NearbyCore
import NearbyLab
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

extension BenchRunner {
  /// The ROSTER flood of the hostile-peers issue: a peer that says it is a relay sends a relay
  /// 25 ROSTER frames of 4 096 made-up peers (20 480 different ones, each with a key that owns
  /// its id) while alice and carol, both connected to the relay, exchange round trips through
  /// it. Figures: their round trips during the flood next to the same without it, and the CPU
  /// time the process (relay, alice and carol) spent from the first frame until the relay
  /// closed the flooder.
  func rosterFlood() async throws -> [BenchmarkResult] {
    progress("hostile: alice <-> carol round trips through a relay while another peer floods it with 25 ROSTER frames of 4096 made-up peers")
    let relay = try await LocalSession.start("relay", isRelay: true)
    let alice = try await LocalSession.start("alice")
    let carol = try await LocalSession.start("carol")
    var aliceEvents = alice.session.events.makeAsyncIterator()
    let carolEvents = carol.session.events.makeAsyncIterator()
    await alice.session.invite(endpoints: [relay.endpoint])
    await carol.session.invite(endpoints: [relay.endpoint])
    let carolID = carol.peer.id
    let aliceID = alice.peer.id
    while let event = await aliceEvents.next() {
      if case .reachable(let peer, _) = event, peer.id == carolID { break }
      if case .error(let error) = event { throw BenchError("alice could not reach carol through the relay: \(error)") }
    }
    // carol answers each of alice's messages.
    let body = [UInt8](repeating: 0x62, count: 64)
    let echo = Task(executorPreference: carol.session.executor) { [session = carol.session] in
      var events = carolEvents
      while let event = await events.next() {
        if case .message(let message) = event, message.from.id == aliceID { _ = try? await session.send(body, to: .peer(aliceID)) }
      }
    }
    // alice's round trips, one after another: `count` of them, or while `measuring` holds.
    let measuring = Mutex(true)
    func roundTrips(count: Int?) async -> [Duration] {
      var times: [Duration] = []
      let clock = ContinuousClock()
      while count.map({ times.count < $0 }) ?? measuring.withLock({ $0 }) {
        let start = clock.now
        guard (try? await alice.session.send(body, to: .peer(carolID))) != nil else { break }
        while let event = await aliceEvents.next() {
          if case .message = event { break }
        }
        times.append(clock.now - start)
      }
      return times
    }
    let rounds = quick ? 100 : 1000
    let alone = Percentiles(await roundTrips(count: rounds))

    let mallory = try SecureTestPeer(port: relay.port)
    try await mallory.joinSession(name: "mallory", capabilities: .relay)
    let entries = SecureTestPeer.madeUpRosterEntries(20_480, seed: 0x5a)
    let cpuBefore = Self.processCPUTime()
    let flood = Task {
      await mallory.inBackground { mallory in
        for round in 0..<25 {
          let start = (round % 5) * 4096
          mallory.write(.roster(Frame.Roster(kind: .add, entries: Array(entries[start..<start + 4096]))))
        }
      }
      // Until the relay closes the flooder (or its reads time out).
      let closed = await mallory.readInBackground()
      return (closed, Self.processCPUTime())
    }
    let during = Task { await roundTrips(count: nil) }
    let (closed, cpuAfter) = await flood.value
    // A second more: what the relay still does after closing the flooder counts too.
    try await Task.sleep(for: .seconds(1))
    measuring.withLock { $0 = false }
    let times = await during.value
    let flooded = Percentiles(times)
    let errors = closed.frames.compactMap { if case .error(let code, let message) = $0 { "\(code): \(message)" } else { nil } }
    let statistics = await relay.session.relayStatistics
    echo.cancel()
    await alice.stop()
    await carol.stop()
    await relay.stop()
    progress(
      "hostile: ROSTER flood: the relay closed the flooder (\(errors.joined(separator: "; "))), roster-limit closes \(statistics.rosterLimitCloses); \(times.count) round trips during it, the slowest \(flooded.max.microseconds) µs"
    )
    func row(_ figure: String, _ ours: Duration, _ theirs: Duration) -> BenchmarkResult {
      BenchmarkResult(
        name: "hostile", figure: figure, unit: "µs", ours: ours.microseconds, baseline: theirs.microseconds,
        baselineName: "the same without the flood",
        higherIsBetter: false)
    }
    return [
      row("round trip through a relay, p50, during a ROSTER flood (25 × 4096 made-up peers)", flooded.p50, alone.p50),
      row("round trip through a relay, max, during a ROSTER flood", flooded.max, alone.max),
      BenchmarkResult(
        name: "hostile", figure: "CPU time from the ROSTER flood's first frame until the relay closed the flooder (one process: relay, alice, carol)",
        unit: "ms", ours: (cpuAfter - cpuBefore) * 1000, baseline: nil, baselineName: nil, higherIsBetter: false),
    ]
  }

  /// User plus system CPU seconds of this process so far.
  static func processCPUTime() -> Double {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    func seconds(_ time: timeval) -> Double { Double(time.tv_sec) + Double(time.tv_usec) / 1e6 }
    return seconds(usage.ru_utime) + seconds(usage.ru_stime)
  }
}
