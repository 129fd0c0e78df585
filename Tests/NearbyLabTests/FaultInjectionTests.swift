import Testing

@testable import NearbyLab

#if canImport(Glibc)
  import Glibc
#endif

/// Each network fault of the harness really has its effect, measured with sockets inside the
/// hosts (``NetworkProbe``) on a LAN of two hosts: counts of packets and whether TCP gets
/// through, never "it got slower" (except the rate limit, whose lower bound is certain).
@Suite(
  "Fault injection: what each network fault does (namespaces, nftables, tc)", .serialized,
  .enabled(if: HarnessTestEnvironment.available && HarnessTestEnvironment.faultToolsInstalled, "needs root inside scripts/test, nft and tc"))
struct FaultInjectionTests {
  let harness = LANHarness(executable: HarnessTestEnvironment.executable, environment: HarnessTestEnvironment.variables)

  /// Builds a LAN of hosts a and b, runs `body`, and always tears the LAN down.
  func withLAN(_ body: (String, LANHost, LANHost) async throws -> Void) async throws {
    let id = "ft\(getpid())-\(UInt16.random(in: 0...UInt16.max))"
    try await harness.up(id: id, segments: ["a,b"])
    do {
      try await body(id, try harness.host(id: id, name: "a"), try harness.host(id: id, name: "b"))
    } catch {
      try? await harness.down(id: id)
      throw error
    }
    try await harness.down(id: id)
    #expect(harness.namespaces(of: id).isEmpty)
  }

  @Test func aPartitionStopsTCPBetweenTwoHostsAndHealRestoresIt() async throws {
    try await withLAN { id, a, b in
      let connection = try #require(await NetworkProbe.connect(from: a, to: b, milliseconds: 5000), "TCP a -> b before the partition")
      defer {
        close(connection.client)
        close(connection.server)
      }
      #expect(await NetworkProbe.arrives("before", from: connection.client, at: connection.server, milliseconds: 5000))
      try await harness.inject(.partition(["a"], ["b"]), into: id)
      #expect(await NetworkProbe.connect(from: a, to: b, milliseconds: 1500) == nil, "no new connection across the partition")
      #expect(await NetworkProbe.connect(from: b, to: a, milliseconds: 1500) == nil, "in either direction")
      #expect(await !NetworkProbe.arrives("during", from: connection.client, at: connection.server, milliseconds: 1500), "nor data")
      try await harness.inject(.healAll, into: id)
      #expect(await NetworkProbe.arrives("during", from: connection.client, at: connection.server, milliseconds: 15000), "retransmitted after heal")
      let fresh = await NetworkProbe.connect(from: a, to: b, milliseconds: 5000)
      #expect(fresh != nil, "new connections after heal")
      if let fresh {
        close(fresh.client)
        close(fresh.server)
      }
    }
  }

  @Test func halfThePacketsAreLostWithFiftyPercentLoss() async throws {
    try await withLAN { id, a, b in
      let before = await NetworkProbe.datagramsDelivered(1000, from: a, to: b)
      #expect(before >= 990, "no loss before the fault: \(before) of 1000")
      try await harness.inject(.loss(host: "b", percent: 50), into: id)
      let lossy = await NetworkProbe.datagramsDelivered(1000, from: a, to: b)
      // Binomial(1000, 0.5): 350...650 is more than nine standard deviations wide.
      #expect((350...650).contains(lossy), "about half arrive with 50% loss: \(lossy) of 1000")
      try await harness.inject(.loss(host: "b", percent: 0), into: id)
      let after = await NetworkProbe.datagramsDelivered(1000, from: a, to: b)
      #expect(after >= 990, "0% ends the loss: \(after) of 1000")
    }
  }

  @Test func aLinkDownCarriesNothingUntilItIsUpAgain() async throws {
    try await withLAN { id, a, b in
      try await harness.inject(.link(host: "b", up: false, segment: nil), into: id)
      #expect(await NetworkProbe.datagramsDelivered(100, from: a, to: b) == 0)
      try await harness.inject(.link(host: "b", up: true, segment: 1), into: id)
      var delivered = 0
      for _ in 0..<20 where delivered == 0 {
        delivered = await NetworkProbe.datagramsDelivered(100, from: a, to: b)
        if delivered == 0 { try await Task.sleep(for: .milliseconds(250)) }
      }
      #expect(delivered > 0, "the link carries packets again")
    }
  }

  @Test func aRateLimitHoldsATransferBackAndOffLiftsIt() async throws {
    try await withLAN { id, a, b in
      try await harness.inject(.rate(host: "a", rate: FaultAction.Rate("1mbit")), into: id)
      let connection = try #require(await NetworkProbe.connect(from: a, to: b, milliseconds: 5000))
      defer {
        close(connection.client)
        close(connection.server)
      }
      // 256 KiB is 2.1 Mbit: at 1 Mbit/s no less than about two seconds, whatever the load.
      let limited = await NetworkProbe.transfer(256 * 1024, from: connection.client, to: connection.server)
      #expect(limited >= .milliseconds(1500), "1mbit: \(limited)")
      try await harness.inject(.rate(host: "a", rate: nil), into: id)
      try await harness.inject(.rate(host: "a", rate: nil), into: id)  // off twice is fine
      let output = await LabProcess.capture(["tc", "-n", a.namespace, "qdisc", "show", "dev", "seg1"]).output
      #expect(!output.contains("tbf"), "\(output)")
    }
  }

  @Test func avahiRestartStartsANewDaemon() async throws {
    try await withLAN { id, _, _ in
      let before = try await harness.avahi(.host(id: id, host: "a"), .status)
      try await harness.inject(.avahi(host: "a", .restart), into: id)
      let after = try await harness.avahi(.host(id: id, host: "a"), .status)
      #expect(before?.hasPrefix("running ") == true && after?.hasPrefix("running ") == true && before != after, "\(before ?? "-") -> \(after ?? "-")")
    }
  }

  @Test func faultsNameOnlyHostsOfTheLAN() async throws {
    try await withLAN { id, _, _ in
      await #expect(throws: LANError.self) { try await harness.inject(.loss(host: "z", percent: 5), into: id) }
      await #expect(throws: LANError.self) { try await harness.inject(.link(host: "a", up: false, segment: 2), into: id) }
      await #expect(throws: LANError.self) { try await harness.inject(.pause("a"), into: id) }
    }
  }
}

extension HarnessTestEnvironment {
  static var faultToolsInstalled: Bool {
    let paths: [String] = ["/usr/sbin/nft", "/sbin/nft"]
    return paths.contains { (path: String) in access(path, X_OK) == 0 }
  }
}
