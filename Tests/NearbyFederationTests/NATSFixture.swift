import Foundation
import NearbyFederation
import NearbyLab
import NearbyTestSupport
import Synchronization
import Testing

/// Facts about where the NATS tests can run: inside the harness (`scripts/lan loopback`,
/// which `scripts/test` uses), whose private network namespace is the only place a test
/// starts nats-server.
enum NATSFixture {
  static let environment = ProcessInfo.processInfo.environment
  static let available: Bool =
    environment["NEARBY_LAN"] != nil
    && ["/usr/sbin/nats-server", "/usr/bin/nats-server"].contains { FileManager.default.isExecutableFile(atPath: $0) }
  static let reason: Comment = "needs nats-server inside scripts/lan loopback (scripts/test)"

  /// Runs `body` with `nodes` servers of their own, stopped afterwards whatever happened.
  static func withServers<T>(_ nodes: Int, tls: NATSTLSFiles? = nil, _ body: (NATSServerCluster) async throws -> T) async throws -> T {
    let cluster = try await NATSServerCluster.start(nodes: nodes, environment: environment, tls: tls)
    do {
      let result = try await body(cluster)
      await cluster.stop()
      return result
    } catch {
      await cluster.stop()
      throw error
    }
  }
}

/// What libnats's handlers report, for a test to wait on.
final class Collected<Element: Sendable>: Sendable {
  let recorder: Recorder<Element>
  let continuation: AsyncStream<Element>.Continuation

  init() {
    let (stream, continuation) = AsyncStream.makeStream(of: Element.self)
    recorder = Recorder(stream)
    self.continuation = continuation
  }

  var handler: @Sendable (Element) -> Void { { [continuation] in continuation.yield($0) } }

  func next<T: Sendable>(within timeout: Duration = .seconds(10), _ what: String, _ match: @escaping @Sendable (Element) -> T?) async throws -> T {
    try await recorder.next(within: timeout, what, match)
  }
}
