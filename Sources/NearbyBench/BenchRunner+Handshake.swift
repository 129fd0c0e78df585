import Nearby
import NearbyCrypto

#if canImport(Glibc)
  import Glibc
#endif

extension BenchRunner {
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
    // Baseline: a bare TCP connect + accept on loopback (on a thread of its own: it blocks).
    let connects = await Thread.offPool {
      let clock = ContinuousClock()
      var connects: [Duration] = []
      for _ in 0..<rounds {
        let start = clock.now
        let (x, y) = RawTCP.pair()
        connects.append(clock.now - start)
        close(x)
        close(y)
      }
      return connects
    }
    let ours = Percentiles(times)
    let raw = Percentiles(connects)
    // What of it is computation: both sides' keys, X25519, signatures and hashing, in memory.
    let cost = HandshakeBenchmark.measure(handshakes: rounds)
    return [
      BenchmarkResult(
        name: "handshake", figure: "invite → connected, p50", unit: "µs", ours: ours.p50.microseconds, baseline: raw.p50.microseconds,
        baselineName: "raw TCP connect+accept", higherIsBetter: false),
      BenchmarkResult(
        name: "handshake", figure: "invite → connected, p99", unit: "µs", ours: ours.p99.microseconds, baseline: raw.p99.microseconds,
        baselineName: "raw TCP connect+accept", higherIsBetter: false),
      BenchmarkResult(
        name: "handshake", figure: "computation per handshake, initiator + responder (no I/O)", unit: "µs",
        ours: (cost.initiator + cost.responder).microseconds, baseline: nil, baselineName: nil, higherIsBetter: false),
    ]
  }
}
