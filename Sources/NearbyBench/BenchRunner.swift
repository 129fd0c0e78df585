import Nearby
import NearbyCore

/// `nearby bench`: each figure of our stack next to a baseline measured in the same run.
///
/// One benchmark per file, as extensions: `BenchRunner+Latency.swift`, `+Throughput`,
/// `+Handshake`, `+FanOut`, `+Memory`, `+Hostile`, `+Files`, `+Loss`, `+Federation`, and
/// `DiscoveryBenchmark.swift`.
public struct BenchRunner: Sendable {
  public let quick: Bool
  public let only: Set<String>
  /// Called with progress lines (stderr).
  public let progress: @Sendable (String) -> Void

  public init(quick: Bool, only: Set<String>, progress: @escaping @Sendable (String) -> Void) {
    self.quick = quick
    self.only = only
    self.progress = progress
  }

  func wants(_ name: String) -> Bool { only.isEmpty || only.contains(name) }

  public func run() async throws -> [BenchmarkResult] {
    var results: [BenchmarkResult] = []
    if only.contains("probe") {
      let transport = try await TransportProbe.pingPong(rounds: 5000)
      progress("probe: transport-only ping-pong p50 \(transport.p50.microseconds) µs, p99 \(transport.p99.microseconds) µs")
      let onLoops = try await TransportProbe.pingPongOnLoops(rounds: 10_000)
      progress("probe: transport-only ping-pong answered on the I/O threads p50 \(onLoops.p50.microseconds) µs, p99 \(onLoops.p99.microseconds) µs")
      let machine = try MachineProbe.nanosecondsPerMessage(count: 100_000)
      progress("probe: state machines alone, one 64 B message and its acknowledgement: \(Int(machine)) ns")
      let buffered = try await EventHubProbe.nanosecondsPerEvent(count: 200_000)
      let woken = try await EventHubProbe.nanosecondsPerWakeUp(count: 200_000)
      progress("probe: an event to a consumer on the session's executor: \(Int(buffered)) ns buffered, \(Int(woken)) ns when it waits")
    }
    // Memory first: the others leave freed heap behind that idle sessions would reuse,
    // which would make them look cheaper than they are.
    var memoryResults: [BenchmarkResult] = []
    if wants("memory") { memoryResults = try await memory() }
    if wants("latency") { results += try await latency() }
    if wants("throughput") { results += try await throughput() }
    if wants("handshake") { results += try await handshake() }
    if wants("fanout") { results += try await fanOut() }
    if wants("hostile") { results += try await hostile() }
    if wants("files") { results += try await files() }
    results += memoryResults
    if wants("discovery") { results += try await discovery() }
    if wants("loss") { results += try await loss() }
    if wants("federation") { results += try await federation() }
    return results
  }

  /// Two connected sessions.
  func pair(busyPoll: Duration? = nil) async throws -> (LocalSession, LocalSession) {
    let a = try await LocalSession.start("bench-a", busyPoll: busyPoll)
    let b = try await LocalSession.start("bench-b", busyPoll: busyPoll)
    var events = a.session.events.makeAsyncIterator()
    await a.session.invite(endpoints: [b.endpoint])
    while let event = await events.next() {
      if case .connected = event { break }
      if case .error(let error) = event { throw BenchError("could not connect: \(error)") }
    }
    return (a, b)
  }

  /// The bytes of one MESSAGE frame with a body of `size` bytes (for the raw baselines).
  func frame(body size: Int) -> [UInt8] {
    var bytes: [UInt8] = []
    FrameEncoder.encodeMessage(
      Frame.Message(id: 1, sender: PeerID.random(), timestamp: 0, recipients: [PeerID.random()], body: [UInt8](repeating: 0x61, count: size)),
      into: &bytes)
    return bytes
  }
}
