import Nearby

#if canImport(Glibc)
  import Glibc
#endif

extension BenchRunner {
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
    // reader has it (on a thread of its own: it blocks).
    let bytes = frame(body: 64)
    let rawTimes = await Thread.offPool { Self.rawFanOut(bytes, to: count, repeats: repeats) }
    return [
      BenchmarkResult(
        name: "fanout", figure: "64 B to \(count) peers, last arrival, p50", unit: "µs", ours: Percentiles(times).p50.microseconds,
        baseline: Percentiles(rawTimes).p50.microseconds, baselineName: "raw TCP, \(count) writes", higherIsBetter: false)
    ]
  }

  /// `bytes` written to `count` raw sockets one after another, `repeats` times: how long
  /// until the last reader had them, each time (blocks).
  static func rawFanOut(_ bytes: [UInt8], to count: Int, repeats: Int) -> [Duration] {
    let clock = ContinuousClock()
    var rawTimes: [Duration] = []
    let pairs = (0..<count).map { _ in RawTCP.pair() }
    for _ in 0..<repeats {
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
    }
    for pair in pairs {
      close(pair.0)
      close(pair.1)
    }
    return rawTimes
  }
}
