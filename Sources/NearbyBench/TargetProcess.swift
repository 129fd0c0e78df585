import Nearby
import NearbySystem

#if canImport(Glibc)
  import Glibc
#endif

/// The hidden target-process mode of the hostile benchmarks (and of the tests that measure a
/// session's memory without the test process in the figure): one session on 127.0.0.1,
/// without DNS-SD, accepting every invitation, its events taken at once. It prints
/// `port N`, then `budget held=H peak=P closed=C` (``NearbySession/receiveBudgetFigures``)
/// whenever those change (at most every 50 ms), and runs until SIGTERM.
///
/// `NEARBY_BENCH_TARGET` holds its settings, `key=value` separated by commas: `budget`
/// (``SessionConfiguration/maximumPartialFrameBytes``), `perSource`
/// (``SessionConfiguration/maximumPendingConnectionsPerSource``), `pending`
/// (``SessionConfiguration/maximumPendingConnections``), `deadPeer` and `handshake` (seconds),
/// `name`; an empty value keeps every default.
extension BenchRunner {
  public static func runTargetProcess(_ specification: String) async -> Int32 {
    var configuration = SessionConfiguration(identity: .ephemeral(), name: try! DisplayName("target"))
    configuration.advertise = false
    configuration.browse = false
    configuration.listenHost = "127.0.0.1"
    configuration.acceptPolicy = .all
    for setting in specification.split(separator: ",") {
      let parts = setting.split(separator: "=", maxSplits: 1).map(String.init)
      guard parts.count == 2 else { return 64 }
      let (key, value) = (parts[0], parts[1])
      switch key {
      case "budget": configuration.maximumPartialFrameBytes = Int(value) ?? configuration.maximumPartialFrameBytes
      case "perSource": configuration.maximumPendingConnectionsPerSource = Int(value) ?? configuration.maximumPendingConnectionsPerSource
      case "pending": configuration.maximumPendingConnections = Int(value) ?? configuration.maximumPendingConnections
      case "deadPeer": configuration.timeouts.deadPeer = .seconds(Double(value) ?? 4)
      case "handshake": configuration.timeouts.handshake = .seconds(Double(value) ?? 5)
      case "files":
        // Few descriptors, to run out of them (RLIMIT_NOFILE).
        var limit = rlimit(rlim_cur: rlim_t(Int(value) ?? 1024), rlim_max: rlim_t(Int(value) ?? 1024))
        guard setrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 1 }
      default: return 64
      }
    }
    guard let session = try? NearbySession(configuration: configuration) else { return 1 }
    let events = session.events.makeAsyncIterator()
    let drain = Task(executorPreference: session.executor) {
      var events = events
      while await events.next() != nil {}
    }
    let run = Task { try await session.run() }
    guard let port = await session.waitUntilListening() else { return 1 }
    OutputWriter.standardOutput.line("port \(port)")
    let report = Task {
      var last = (held: -1, peak: -1, closed: -1)
      while !Task.isCancelled {
        let figures = await session.receiveBudgetFigures
        if figures != last {
          OutputWriter.standardOutput.line("budget held=\(figures.held) peak=\(figures.peak) closed=\(figures.closed)")
          last = figures
        }
        try? await Task.sleep(for: .milliseconds(50))
      }
    }
    _ = try? await run.value
    report.cancel()
    drain.cancel()
    return 0
  }
}
