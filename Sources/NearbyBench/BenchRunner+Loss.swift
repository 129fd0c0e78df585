import Nearby
import NearbySystem
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

extension BenchRunner {
  /// Goodput under packet loss: 16 KiB messages from one session to another for a few
  /// seconds while 1% and then 10% of the packets on loopback are dropped (nftables
  /// `numgen random` on `lo`, MTU 1500 as on Ethernet), next to raw TCP under the same loss:
  /// three interleaved rounds of each (one with `--quick`), the median.
  /// Our sessions may lose their connection and resume meanwhile; goodput counts what the
  /// receiving application took. Only inside the private LAN harness (`scripts/lan loopback`),
  /// as root: it changes the namespace's loopback, and never touches the machine's network.
  func loss() async throws -> [BenchmarkResult] {
    if let reason = LossyLoopback.refusal() {
      progress("loss: skipped (\(reason))")
      return []
    }
    let seconds = quick ? 2 : 5
    let rounds = quick ? 1 : 3
    progress(
      "loss: \(rounds) × \(seconds) s of 16 KiB messages at 1% and at 10% loss on loopback (MTU 1500, no offload), ours and raw TCP in turn")
    let loopback = try await LossyLoopback.begin()
    var results: [BenchmarkResult] = []
    do {
      for percent in [1, 10] {
        // Interleaved rounds, the median of each: loss makes single runs swing widely. Each
        // connection is set up before the loss begins, so both measure a connection in use.
        var oursRounds: [Double] = []
        var rawRounds: [Double] = []
        var resumed = 0
        for _ in 0..<rounds {
          let (rate, reconnections) = try await goodput(seconds: seconds, size: 16_384) { try await loopback.drop(percent: percent) }
          try await loopback.drop(percent: 0)
          oursRounds.append(rate)
          resumed += reconnections
          let sockets = await Thread.offPool { RawTCP.pair() }
          try await loopback.drop(percent: percent)
          rawRounds.append(await Thread.offPool { RawTCP.goodput(sockets, seconds: seconds, chunk: 65_536) })
          try await loopback.drop(percent: 0)
        }
        let ours = oursRounds.sorted()[rounds / 2]
        let raw = rawRounds.sorted()[rounds / 2]
        let figures = "ours \(oursRounds.map(Self.twoDecimals)) MB/s (\(resumed) reconnections), raw TCP \(rawRounds.map(Self.twoDecimals)) MB/s"
        progress("loss: \(percent)%: " + figures)
        results.append(
          BenchmarkResult(
            name: "loss", figure: "goodput, 16 KiB messages, \(percent)% loss both ways", unit: "MB/s", ours: ours, baseline: raw,
            baselineName: "raw TCP under the same loss", higherIsBetter: true))
      }
    } catch {
      await loopback.end()
      throw error
    }
    await loopback.end()
    return results
  }

  static func twoDecimals(_ value: Double) -> String { String(Double(Int((value * 100).rounded())) / 100) }

  /// Bytes of messages B's application took in `seconds` from A sending as fast as it may.
  /// - Returns: MB/s, and how many times the session resumed.
  private func goodput(seconds: Int, size: Int, whenConnected: () async throws -> Void) async throws -> (Double, Int) {
    let (a, b) = try await pair()
    try await whenConnected()
    let body = [UInt8](repeating: 0x67, count: size)
    let bID = b.peer.id
    let aSession = a.session
    let clock = ContinuousClock()
    let deadline = clock.now + .seconds(seconds)
    let taken = Counter()
    let aliceEvents = aSession.events.makeAsyncIterator()
    let drain = Task(executorPreference: aSession.executor) { () -> Int in
      var events = aliceEvents
      var resumed = 0
      while let event = await events.next() {
        if case .reconnected = event { resumed += 1 }
      }
      return resumed
    }
    let bobEvents = b.session.events.makeAsyncIterator()
    let counting = Task(executorPreference: b.session.executor) {
      var events = bobEvents
      while let event = await events.next() {
        if case .message(let message) = event, clock.now < deadline { taken.add(message.body.count) }
      }
    }
    let sender = Task(executorPreference: aSession.executor) {
      while clock.now < deadline, !Task.isCancelled { _ = try? await aSession.send(body, to: .peer(bID)) }
    }
    try await clock.sleep(until: deadline)
    let bytes = taken.value
    // A connection stalled by the loss may hold the sender: stopping the sessions ends it all.
    sender.cancel()
    await a.stop()
    await b.stop()
    await sender.value
    await counting.value
    let resumed = await drain.value
    return (Double(bytes) / Double(seconds) / 1e6, resumed)
  }
}

/// The private namespace's loopback made lossy: MTU 1500, no segmentation offload (so that a
/// "packet" the filter drops is one of 1500 bytes, not a 64 KiB burst), and an nftables table
/// that drops a share of the packets it receives (each packet crosses `lo` once, so each
/// direction loses that share). Undone by ``end()``.
struct LossyLoopback: Sendable {
  static let table = "nearby_bench_loss"
  let originalMTU: String

  /// Why the benchmark cannot run here, or nil when it can: inside `scripts/lan loopback`
  /// (its own network namespace, not PID 1's), as root, with `nft` and `ip`.
  static func refusal() -> String? {
    guard getenv("NEARBY_LAN").map({ String(cString: $0) }) == "loopback" else { return "run it inside scripts/lan loopback" }
    guard getuid() == 0 else { return "it needs root to change the private loopback" }
    // The machine's own namespace is kthreadd's (kernel threads never leave it) or PID 1's.
    var ours = stat()
    var machine = stat()
    guard stat("/proc/self/ns/net", &ours) == 0, stat("/proc/2/ns/net", &machine) == 0 || stat("/proc/1/ns/net", &machine) == 0 else {
      return "cannot tell this network namespace from the machine's own"
    }
    guard ours.st_ino != machine.st_ino || ours.st_dev != machine.st_dev else { return "this is the machine's own network namespace" }
    for tool in ["nft", "ip"] where !ToolSearch.inPath(tool) { return "\(tool) is not installed (scripts/install-deps)" }
    return nil
  }

  static func begin() async throws -> LossyLoopback {
    var mtu = ""
    if let file = fopen("/sys/class/net/lo/mtu", "r") {
      var line = [CChar](repeating: 0, count: 32)
      if fgets(&line, Int32(line.count), file) != nil { mtu = String(decoding: line.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) }
      fclose(file)
    }
    mtu = mtu.filter(\.isNumber)
    try await run(["ip", "link", "set", "dev", "lo", "mtu", "1500", "gso_max_size", "1500", "gso_max_segs", "1"])
    return LossyLoopback(originalMTU: mtu.isEmpty ? "65536" : mtu)
  }

  /// Drops `percent` % of what `lo` receives (0: nothing).
  func drop(percent: Int) async throws {
    var script = "table inet \(Self.table)\ndelete table inet \(Self.table)\n"
    if percent > 0 {
      script += """
        table inet \(Self.table) {
          chain input {
            type filter hook input priority -10; policy accept;
            iifname "lo" numgen random mod 100 < \(percent) drop
          }
        }

        """
    }
    let path = "/tmp/nearby-bench-loss-\(getpid()).nft"
    guard let file = fopen(path, "w") else { throw BenchError("cannot write \(path)") }
    fputs(script, file)
    fclose(file)
    defer { unlink(path) }
    try await Self.run(["nft", "-f", path])
  }

  func end() async {
    try? await drop(percent: 0)
    try? await Self.run(["ip", "link", "set", "dev", "lo", "mtu", originalMTU, "gso_max_size", "65536", "gso_max_segs", "65535"])
  }

  private static func run(_ command: [String]) async throws {
    let child = try ChildProcess(command[0], Array(command.dropFirst()), standardInput: .null, standardOutput: .null, standardError: .inherit)
    let status = await child.wait()
    guard status == 0 else { throw BenchError("\(command.joined(separator: " ")) failed (exit \(status))") }
  }
}

/// Whether a tool is in `PATH` (also the sbin directories, where root's tools live).
enum ToolSearch {
  static func inPath(_ tool: String) -> Bool {
    let path = getenv("PATH").map { String(cString: $0) } ?? "/usr/bin:/bin"
    return (path.split(separator: ":").map(String.init) + ["/usr/sbin", "/sbin"]).contains { access("\($0)/\(tool)", X_OK) == 0 }
  }
}

/// A count that several tasks add to.
final class Counter: Sendable {
  private let count = Atomic<Int>(0)
  func add(_ amount: Int) { count.add(amount, ordering: .relaxed) }
  var value: Int { count.load(ordering: .relaxed) }
}

extension RawTCP {
  /// Bytes per second (in MB/s) that one blocking writer gets through a connected pair to
  /// one reader in `seconds`, writing `chunk` bytes at a time; closes both.
  static func goodput(_ sockets: (Int32, Int32), seconds: Int, chunk: Int) -> Double {
    let (a, b) = sockets
    // Both ends wake up now and then to look at the clock (a stalled connection blocks).
    var timeout = timeval(tv_sec: 0, tv_usec: 200_000)
    setsockopt(a, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    setsockopt(b, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    let clock = ContinuousClock()
    let deadline = clock.now + .seconds(seconds)
    let writer = Thread {
      let data = [UInt8](repeating: 0x72, count: chunk)
      while clock.now < deadline { data.withUnsafeBytes { writeAvailable(a, $0.baseAddress!, $0.count, until: deadline) } }
      shutdown(a, Int32(SHUT_WR))
    }
    writer.start()
    var buffer = [UInt8](repeating: 0, count: 1 << 20)
    var received = 0
    while clock.now < deadline {
      let got = buffer.withUnsafeMutableBytes { recv(b, $0.baseAddress, $0.count, 0) }
      if got < 0 && (errno == EAGAIN || errno == EINTR) { continue }
      if got <= 0 { break }
      if clock.now < deadline { received += got }
    }
    // Unblock the writer (it may wait for room) and let it finish.
    shutdown(b, Int32(SHUT_RDWR))
    writer.join()
    close(a)
    close(b)
    return Double(received) / Double(seconds) / 1e6
  }
}

extension RawTCP {
  /// Writes until everything is sent or `deadline` passes (a send that times out is retried).
  static func writeAvailable(_ fd: Int32, _ pointer: UnsafeRawPointer, _ count: Int, until deadline: ContinuousClock.Instant) {
    var offset = 0
    while offset < count, ContinuousClock.now < deadline {
      let written = send(fd, pointer + offset, count - offset, Int32(MSG_NOSIGNAL))
      if written < 0 && (errno == EAGAIN || errno == EINTR) { continue }
      if written <= 0 { return }
      offset += written
    }
  }
}
