import CNearbySystem
import Nearby
import NearbyTransport
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// One line of the results table.
public struct BenchmarkResult: Sendable {
  public let name: String
  public let figure: String
  public let unit: String
  public let ours: Double
  public let baseline: Double?
  public let baselineName: String?
  /// How "ratio" reads: ours/baseline for times, ours/baseline for rates too (higher is better).
  public let higherIsBetter: Bool

  public var ratio: Double? { baseline.map { $0 == 0 ? 0 : ours / $0 } }
}

/// Two sessions (or more) in this process, on loopback, without DNS-SD.
struct LocalSession: Sendable {
  let session: NearbySession
  let task: Task<Void, any Error>
  var peer: Peer { session.configuration.peer }
  let port: UInt16

  /// - Parameter busyPoll: `nil`: the configuration's default.
  static func start(_ name: String, policy: AcceptPolicy = .all, busyPoll: Duration? = nil, isRelay: Bool = false) async throws -> LocalSession {
    var configuration = SessionConfiguration(identity: .ephemeral(), name: try DisplayName(name))
    if let busyPoll { configuration.busyPoll = busyPoll }
    configuration.isRelay = isRelay
    configuration.advertise = false
    configuration.browse = false
    configuration.listenHost = "127.0.0.1"
    configuration.acceptPolicy = policy
    if getenv("NEARBY_BENCH_PATIENT") != nil {
      // Profiling under valgrind, which runs a program some fifty times slower: a peer is
      // not taken for dead (its session then reconnected and sent its whole resend window
      // again, every few seconds, and the count of instructions per message meant nothing).
      configuration.timeouts.deadPeer = .seconds(3600)
      configuration.timeouts.pingInterval = .seconds(600)
    }
    let session = try NearbySession(configuration: configuration)
    let task = Task { try await session.run() }
    guard let port = await session.waitUntilListening() else { throw BenchError("a session did not start") }
    return LocalSession(session: session, task: task, port: port)
  }

  var endpoint: Endpoint { Endpoint(host: "127.0.0.1", port: port) }

  func stop() async {
    await session.shutdown()
    _ = try? await task.value
  }
}

struct BenchError: Error, CustomStringConvertible {
  let description: String
  init(_ description: String) { self.description = description }
}

/// Statistics over durations.
struct Percentiles {
  let sorted: [Duration]
  init(_ values: [Duration]) { sorted = values.sorted() }
  func at(_ fraction: Double) -> Duration { sorted[min(sorted.count - 1, Int(Double(sorted.count) * fraction))] }
  var p50: Duration { at(0.5) }
  var p99: Duration { at(0.99) }
  var max: Duration { sorted.last ?? .zero }
}

extension Duration {
  var microseconds: Double { Double(components.seconds) * 1e6 + Double(components.attoseconds) / 1e12 }
  var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}
