import Nearby

#if canImport(Glibc)
  import Glibc
#endif

extension BenchRunner {
  /// Hostile peers: an honest peer's round trips to a session while another peer floods
  /// that session (64 B messages, then 1 MiB ones), next to the same without the flood; and,
  /// inside the private LAN (the chat needs avahi-daemon), a real `nearby chat --plain`
  /// flooded with 1 MiB messages for 30 s (3 s with `--quick`) writing to /dev/null and to
  /// a pipe nobody reads (``ChatFlood``).
  func hostile() async throws -> [BenchmarkResult] {
    let rounds = quick ? 300 : 3000
    let blocks = 5
    progress(
      "hostile: \(rounds) round trips of an honest peer, alone and while another peer floods the same session, in \(blocks) interleaved blocks")
    // Interleaved, as in the latency benchmark: where the scheduler puts the threads changes
    // round trips several-fold here.
    var aloneTimes: [Duration] = []
    var smallFloodTimes: [Duration] = []
    var largeFloodTimes: [Duration] = []
    for _ in 0..<blocks {
      aloneTimes += try await honestRoundTrips(rounds / blocks, flood: nil)
      smallFloodTimes += try await honestRoundTrips(rounds / blocks, flood: 64)
      largeFloodTimes += try await honestRoundTrips(rounds / blocks, flood: NearbySession.maximumMessageSize)
    }
    let alone = Percentiles(aloneTimes)
    let smallFlood = Percentiles(smallFloodTimes)
    let largeFlood = Percentiles(largeFloodTimes)
    func row(_ figure: String, _ ours: Duration, _ theirs: Duration) -> BenchmarkResult {
      BenchmarkResult(
        name: "hostile", figure: figure, unit: "µs", ours: ours.microseconds, baseline: theirs.microseconds,
        baselineName: "the same without the flood",
        higherIsBetter: false)
    }
    var results = [
      row("round trip 64 B, p50, another peer flooding 64 B messages", smallFlood.p50, alone.p50),
      row("round trip 64 B, p99, another peer flooding 64 B messages", smallFlood.p99, alone.p99),
      row("round trip 64 B, p50, another peer flooding 1 MiB messages", largeFlood.p50, alone.p50),
      row("round trip 64 B, p99, another peer flooding 1 MiB messages", largeFlood.p99, alone.p99),
    ]
    results += try await rosterFlood()
    guard getenv("NEARBY_AVAHI").map({ String(cString: $0) }) == "1", access("/run/avahi-daemon/socket", F_OK) == 0,
      let executable = BenchRunner.executablePath()
    else {
      progress("hostile: the flooded chat needs avahi-daemon: run inside scripts/lan loopback")
      return results
    }
    let seconds = quick ? 3.0 : 30.0
    for (output, json) in [(ChatFlood.Output.devNull, false), (.unreadPipe, false), (.devNull, true)] {
      let mode = json ? "--json" : "--plain"
      progress("hostile: nearby chat \(mode) writing to \(output.rawValue), flooded with 1 MiB messages for \(Int(seconds)) s")
      let report = try await ChatFlood(executable: executable, output: output, json: json, seconds: seconds, carolAfter: seconds / 2).run()
      progress("hostile: \(report)")
      func figure(_ figure: String, _ value: Double, _ unit: String) -> BenchmarkResult {
        BenchmarkResult(
          name: "hostile", figure: "chat\(json ? " --json" : "") flooded \(Int(seconds)) s, output to \(output.rawValue): \(figure)", unit: unit,
          ours: value, baseline: nil, baselineName: nil, higherIsBetter: false)
      }
      results.append(figure("resident memory growth", Double(report.rssGrowth) / Double(1 << 20), "MiB"))
      results.append(figure("1 MiB messages delivered", Double(report.delivered), "msg"))
      if output == .devNull {
        results.append(figure("another peer's message delivered after", report.carolLatency.map { $0.seconds * 1000 } ?? -1, "ms"))
      } else {
        results.append(figure("delivered but not shown once read", Double(report.deliveredNotShown.count), "msg"))
      }
    }
    return results
  }

  /// Round trips of 64 B between an honest peer and a session that echoes it, while a third
  /// peer sends the session messages of `flood` bytes as fast as it lets it (nil: no flood).
  /// Events are consumed on the sessions' executors, as in the latency benchmark.
  func honestRoundTrips(_ rounds: Int, flood: Int?) async throws -> [Duration] {
    let (honest, victim) = try await pair()
    let flooder = try await LocalSession.start("flooder")
    var flooderEvents = flooder.session.events.makeAsyncIterator()
    await flooder.session.invite(endpoints: [victim.endpoint])
    while let event = await flooderEvents.next() {
      if case .connected = event { break }
      if case .error(let error) = event { throw BenchError("the flooder could not connect: \(error)") }
    }
    let victimID = victim.peer.id
    let honestID = honest.peer.id
    let body = [UInt8](repeating: 0x62, count: 64)
    let victimSession = victim.session
    let honestSession = honest.session
    let echoEvents = victimSession.events.makeAsyncIterator()
    let measureEvents = honestSession.events.makeAsyncIterator()
    let echo = Task(executorPreference: victimSession.executor) {
      var events = echoEvents
      while let event = await events.next() {
        if case .message(let message) = event, message.from.id == honestID { _ = try? await victimSession.send(body, to: .peer(honestID)) }
      }
    }
    let flooding = Task(executorPreference: flooder.session.executor) { [session = flooder.session] in
      guard let flood else { return }
      let bytes = [UInt8](repeating: 0x66, count: flood)
      while !Task.isCancelled {
        guard (try? await session.send(bytes, to: .peer(victimID))) != nil else { break }
      }
    }
    let flooderDrain = Task { while await flooderEvents.next() != nil {} }
    // The flood gets going first.
    try await Task.sleep(for: .milliseconds(flood == nil ? 10 : 300))
    let measure = Task(executorPreference: honestSession.executor) { () -> [Duration] in
      var events = measureEvents
      var times: [Duration] = []
      times.reserveCapacity(rounds + 50)
      let clock = ContinuousClock()
      for _ in 0..<rounds + 50 {
        let start = clock.now
        _ = try? await honestSession.send(body, to: .peer(victimID))
        while let event = await events.next() {
          if case .message = event { break }
        }
        times.append(clock.now - start)
      }
      return times
    }
    let times = await measure.value
    flooding.cancel()
    echo.cancel()
    flooderDrain.cancel()
    await flooder.stop()
    await honest.stop()
    await victim.stop()
    return Array(times.dropFirst(50))
  }
}
