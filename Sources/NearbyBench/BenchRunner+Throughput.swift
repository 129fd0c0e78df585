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
    let rawSmall = await Thread.offPool { RawTCP.oneWay(frame: smallFrame, count: smallCount, batchBytes: nil) }
    let rawSmallBatched = await Thread.offPool { RawTCP.oneWay(frame: smallFrame, count: smallCount, batchBytes: 1 << 20) }
    let large = try await oneWay(size: 65_536, count: largeCount)
    let largeFrame = frame(body: 65_536)
    let rawLargeBatched = await Thread.offPool { RawTCP.oneWay(frame: largeFrame, count: largeCount, batchBytes: 1 << 20) }
    let rawLarge = await Thread.offPool { RawTCP.oneWay(frame: largeFrame, count: largeCount, batchBytes: nil) }
    func rate(_ count: Int, _ time: Duration) -> Double { Double(count) / time.seconds }
    func megabytes(_ count: Int, _ time: Duration) -> Double { Double(count * 65_536) / time.seconds / 1e6 }
    // The ceiling of the encrypted stream: every byte is sealed on one core (and opened on
    // the other), with the cipher two peers of this machine negotiate.
    let cipher: RecordCipher = RecordCipher.aes256GCM.isAvailable ? .aes256GCM : .chacha20Poly1305
    let seal = AEADBenchmark.sealRate(cipher: cipher, size: 65_536, duration: quick ? .milliseconds(200) : .seconds(1))
    // Sealing is not all a sender does: its bytes also cross the kernel, whose CPU time per
    // byte the raw run with 1 MiB writes (the cheapest way to hand TCP bytes) measured on
    // either side. Seconds of CPU per byte: a sender that seals and writes on one core
    // reaches at most 1 / (seal + write); any design, with both CPUs of a two-CPU machine
    // busy sealing, opening (taken as fast as sealing, which is generous: libsodium's AES-GCM
    // opened 8-11% slower than it sealed on the machine of the README's table) and moving bytes, at most
    // 2 / (2 seal + write + read).
    let largeBytes = Double(largeCount * largeFrame.count)
    let sealCost = 1 / seal.bytesPerSecond
    let writeCost = rawLargeBatched.writerCPU.seconds / largeBytes
    let readCost = rawLargeBatched.readerCPU.seconds / largeBytes
    let senderCeiling = 1 / (sealCost + writeCost) / 1e6
    let twoCPUCeiling = 2 / (2 * sealCost + writeCost + readCost) / 1e6
    progress(
      "throughput: raw TCP with 1 MiB writes took \(Self.nanoseconds(writeCost)) ns of the writer's CPU and \(Self.nanoseconds(readCost)) ns of the reader's per byte; sealing \(Self.nanoseconds(sealCost)) ns"
    )
    return [
      BenchmarkResult(
        name: "throughput", figure: "64 B messages one way", unit: "msg/s", ours: rate(smallCount, small),
        baseline: rate(smallCount, rawSmall.elapsed),
        baselineName: "raw TCP, one write per message", higherIsBetter: true),
      BenchmarkResult(
        name: "throughput", figure: "64 B messages one way", unit: "msg/s", ours: rate(smallCount, small),
        baseline: rate(smallCount, rawSmallBatched.elapsed), baselineName: "raw TCP, 1 MiB writes", higherIsBetter: true),
      BenchmarkResult(
        name: "throughput", figure: "64 KiB messages one way", unit: "MB/s", ours: megabytes(largeCount, large),
        baseline: megabytes(largeCount, rawLargeBatched.elapsed), baselineName: "raw TCP, 1 MiB writes", higherIsBetter: true),
      BenchmarkResult(
        name: "throughput", figure: "64 KiB messages one way", unit: "MB/s", ours: megabytes(largeCount, large),
        baseline: megabytes(largeCount, rawLarge.elapsed), baselineName: "raw TCP, one write per message", higherIsBetter: true),
      BenchmarkResult(
        name: "throughput", figure: "64 KiB messages one way", unit: "MB/s", ours: megabytes(largeCount, large),
        baseline: seal.bytesPerSecond / 1e6, baselineName: "sealing 64 KiB records, one core (\(cipher))", higherIsBetter: true),
      BenchmarkResult(
        name: "throughput", figure: "64 KiB messages one way", unit: "MB/s", ours: megabytes(largeCount, large), baseline: senderCeiling,
        baselineName: "ceiling of a sender on one core: sealing + raw TCP's writer CPU per byte", higherIsBetter: true),
      BenchmarkResult(
        name: "throughput", figure: "64 KiB messages one way", unit: "MB/s", ours: megabytes(largeCount, large), baseline: twoCPUCeiling,
        baselineName: "ceiling of any design on 2 CPUs: sealing, opening, raw TCP's writer and reader CPU per byte", higherIsBetter: true),
    ]
  }

  /// Seconds per byte as nanoseconds, two decimals.
  static func nanoseconds(_ secondsPerByte: Double) -> String {
    let value = (secondsPerByte * 1e11).rounded() / 100
    return "\(value)"
  }
}
