import CNearbySystem
import Nearby
import NearbySystem

#if canImport(Glibc)
  import Glibc
#endif

extension BenchRunner {
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
