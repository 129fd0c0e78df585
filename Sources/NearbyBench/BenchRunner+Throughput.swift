import Nearby
import NearbyCrypto

#if canImport(Glibc)
  import Glibc
#endif

extension BenchRunner {
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
    if let profile = getenv("NEARBY_BENCH_PROFILE"), String(cString: profile) == "large" {
      // Profiling our side only, large messages.
      let large = try await oneWay(size: 65_536, count: largeCount)
      return [
        BenchmarkResult(
          name: "throughput", figure: "64 KiB messages one way", unit: "MB/s", ours: Double(largeCount * 65_536) / large.seconds / 1e6,
          baseline: nil, baselineName: nil, higherIsBetter: true)
      ]
    }
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
    // The ceiling of the encrypted stream: every byte is sealed on one core (and opened on
    // the other), with the cipher two peers of this machine negotiate.
    let cipher: RecordCipher = RecordCipher.aes256GCM.isAvailable ? .aes256GCM : .chacha20Poly1305
    let seal = AEADBenchmark.sealRate(cipher: cipher, size: 65_536, duration: quick ? .milliseconds(200) : .seconds(1))
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
      BenchmarkResult(
        name: "throughput", figure: "64 KiB messages one way", unit: "MB/s", ours: megabytes(largeCount, large),
        baseline: seal.bytesPerSecond / 1e6, baselineName: "sealing 64 KiB records, one core (\(cipher))", higherIsBetter: true),
    ]
  }
}
