import Nearby
import NearbyCore
import NearbyFederation
import NearbyLab
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

extension BenchRunner {
  /// Across sites: alice behind relay r1 (site1, on NATS node n1) and carol behind r2 (site2,
  /// on n2), a 3-node JetStream cluster on loopback between them, next to NATS itself through
  /// the same cluster from the same nodes: request/reply for round trips, core publish and
  /// JetStream publish (three replicas, acknowledged) for throughput. Only inside the
  /// harness's private namespace (nats-server never runs on the machine's own network).
  func federation() async throws -> [BenchmarkResult] {
    guard getenv("NEARBY_LAN") != nil else {
      progress("federation: skipped (run inside scripts/lan loopback: nats-server runs only in a private namespace)")
      return []
    }
    let environment = ProcessEnvironmentSnapshot.current
    let cluster: NATSServerCluster
    do {
      cluster = try await NATSServerCluster.start(nodes: 3, environment: environment)
    } catch {
      progress("federation: skipped (\(error))")
      return []
    }
    do {
      let results = try await federation(on: cluster)
      await cluster.stop()
      return results
    } catch {
      await cluster.stop()
      throw error
    }
  }

  private func federation(on cluster: NATSServerCluster) async throws -> [BenchmarkResult] {
    let rounds = quick ? 100 : 1000
    let count = quick ? 1000 : 10_000
    let urls = cluster.plan.clientURLs
    progress("federation: 3 NATS nodes on loopback; \(rounds) round trips of 64 B across sites, \(count) messages one way, and the same through NATS")
    let sites = try await FederatedPair.start(servers: urls)
    let ourTrips: [Duration]
    let ourRate: Double
    do {
      ourTrips = try await sites.roundTrips(rounds)
      ourRate = try await sites.oneWay(count)
      await sites.stop()
    } catch {
      await sites.stop()
      throw error
    }
    let baseline = try await NATSBaseline.start(first: urls[0], second: urls[1])
    let theirTrips = try await baseline.requestReply(rounds)
    let corePublish = try await baseline.corePublish(count)
    let jetStreamPublish = try await baseline.jetStreamPublish(count)
    baseline.close()
    let ours = Percentiles(ourTrips)
    let theirs = Percentiles(theirTrips)
    func trip(_ figure: String, _ mine: Duration, _ other: Duration) -> BenchmarkResult {
      BenchmarkResult(
        name: "federation", figure: figure, unit: "µs", ours: mine.microseconds, baseline: other.microseconds,
        baselineName: "NATS request/reply, n1 → n2", higherIsBetter: false)
    }
    return [
      trip("round trip 64 B across sites, p50", ours.p50, theirs.p50), trip("round trip 64 B across sites, p99", ours.p99, theirs.p99),
      BenchmarkResult(
        name: "federation", figure: "64 B messages across sites, one way", unit: "msg/s", ours: ourRate, baseline: jetStreamPublish,
        baselineName: "JetStream publish, 3 replicas, acknowledged", higherIsBetter: true),
      BenchmarkResult(
        name: "federation", figure: "64 B messages across sites, one way", unit: "msg/s", ours: ourRate, baseline: corePublish,
        baselineName: "NATS publish n1 → subscriber on n2", higherIsBetter: true),
    ]
  }
}

/// The environment, for the NATS servers' start (which checks the namespace).
enum ProcessEnvironmentSnapshot {
  static var current: [String: String] {
    var variables: [String: String] = [:]
    var pointer = environ
    while let entry = pointer.pointee {
      let text = String(cString: entry)
      if let equals = text.firstIndex(of: "=") { variables[String(text[..<equals])] = String(text[text.index(after: equals)...]) }
      pointer += 1
    }
    return variables
  }
}

/// alice — r1 (site1, NATS n1) … NATS … r2 (site2, NATS n2) — carol, in this process.
struct FederatedPair: Sendable {
  let r1: LocalRelay
  let r2: LocalRelay
  let alice: LocalSession
  let carol: LocalSession

  static func start(servers: [String]) async throws -> FederatedPair {
    let r1 = try await LocalRelay.start("bench-r1", site: "site1", servers: [servers[0]] + servers.dropFirst())
    let r2 = try await LocalRelay.start("bench-r2", site: "site2", servers: [servers[1], servers[0], servers[2]])
    let alice = try await LocalSession.start("bench-alice")
    let carol = try await LocalSession.start("bench-carol")
    for (peer, relay) in [(alice, r1), (carol, r2)] {
      var events = peer.session.events.makeAsyncIterator()
      await peer.session.invite(endpoints: [relay.endpoint])
      while let event = await events.next() {
        if case .connected = event { break }
        if case .error(let error) = event { throw BenchError("could not connect to a relay: \(error)") }
      }
    }
    // Each sees the other through the federation.
    for (peer, other) in [(alice, carol), (carol, alice)] {
      let deadline = ContinuousClock.now + .seconds(30)
      while await !peer.session.reachablePeers(for: .peer(other.peer.id)).contains(where: { $0.id == other.peer.id }) {
        guard ContinuousClock.now < deadline else { throw BenchError("the sites did not find each other within 30 s") }
        try await Task.sleep(for: .milliseconds(50))
      }
    }
    return FederatedPair(r1: r1, r2: r2, alice: alice, carol: carol)
  }

  /// alice sends 64 B to carol, carol answers 64 B: the time until alice has the answer.
  func roundTrips(_ rounds: Int) async throws -> [Duration] {
    let body = [UInt8](repeating: 0x62, count: 64)
    let aliceSession = alice.session
    let carolSession = carol.session
    let aliceID = alice.peer.id
    let carolID = carol.peer.id
    let echoEvents = carolSession.events.makeAsyncIterator()
    let measureEvents = aliceSession.events.makeAsyncIterator()
    let echo = Task(executorPreference: carolSession.executor) {
      var events = echoEvents
      while let event = await events.next() {
        if case .message = event { _ = try? await carolSession.send(body, to: .peer(aliceID)) }
      }
    }
    let warmUp = min(20, rounds / 5)
    let measure = Task(executorPreference: aliceSession.executor) { () -> [Duration] in
      var events = measureEvents
      var times: [Duration] = []
      let clock = ContinuousClock()
      for _ in 0..<(rounds + warmUp) {
        let start = clock.now
        _ = try? await aliceSession.send(body, to: .peer(carolID))
        while let event = await events.next() {
          if case .message = event { break }
        }
        times.append(clock.now - start)
      }
      return times
    }
    let times = await measure.value
    echo.cancel()
    return Array(times.dropFirst(warmUp))
  }

  /// alice sends `count` messages of 64 B to carol: messages per second until carol's
  /// application has taken the last one.
  func oneWay(_ count: Int) async throws -> Double {
    let body = [UInt8](repeating: 0x63, count: 64)
    let aliceSession = alice.session
    let carolSession = carol.session
    let carolID = carol.peer.id
    let clock = ContinuousClock()
    let aliceEvents = aliceSession.events.makeAsyncIterator()
    let drain = Task(executorPreference: aliceSession.executor) {
      var events = aliceEvents
      while await events.next() != nil {}
    }
    let carolEvents = carolSession.events.makeAsyncIterator()
    let arrived = Task(executorPreference: carolSession.executor) { () -> ContinuousClock.Instant in
      var remaining = count
      var events = carolEvents
      while let event = await events.next() {
        if case .message = event {
          remaining -= 1
          if remaining == 0 { break }
        }
      }
      return clock.now
    }
    let start = clock.now
    let sender = Task(executorPreference: aliceSession.executor) {
      for _ in 0..<count { _ = try? await aliceSession.send(body, to: .peer(carolID)) }
    }
    await sender.value
    let end = await arrived.value
    drain.cancel()
    return Double(count) / (end - start).seconds
  }

  func stop() async {
    await alice.stop()
    await carol.stop()
    await r1.stop()
    await r2.stop()
  }
}

/// A federated relay in this process.
struct LocalRelay: Sendable {
  let session: NearbySession
  let federation: Federation
  let task: Task<Void, any Error>
  let federationTask: Task<Void, Never>
  let port: UInt16
  var endpoint: Endpoint { Endpoint(host: "127.0.0.1", port: port) }

  static func start(_ name: String, site: String, servers: [String]) async throws -> LocalRelay {
    var configuration = SessionConfiguration(identity: .ephemeral(), name: try DisplayName(name))
    configuration.isRelay = true
    configuration.advertise = false
    configuration.browse = false
    configuration.listenHost = "127.0.0.1"
    configuration.acceptPolicy = .all
    configuration.federation = FederationSettings(site: site)
    let session = try NearbySession(configuration: configuration)
    var settings = NATSSettings(servers: servers, name: name)
    settings.keepsServerOrder = true
    let federation = await Federation(configuration: FederationConfiguration(nats: settings, site: site), session: session)
    var events = federation.events.makeAsyncIterator()
    let federationTask = Task { await federation.run() }
    let task = Task { try await session.run() }
    guard let port = await session.waitUntilListening() else { throw BenchError("a relay did not start") }
    // Ready: the stream, the bucket and presence.
    let deadline = ContinuousClock.now + .seconds(30)
    while let event = await events.next() {
      if case .ready = event { break }
      if ContinuousClock.now > deadline { throw BenchError("the federation of \(name) was not ready within 30 s") }
    }
    return LocalRelay(session: session, federation: federation, task: task, federationTask: federationTask, port: port)
  }

  func stop() async {
    await session.shutdown()
    _ = try? await task.value
    federation.shutdown()
    await federationTask.value
  }
}

/// NATS alone, through the same cluster: one client on n1, one on n2.
struct NATSBaseline: Sendable {
  let first: NATSConnection
  let second: NATSConnection
  let work = NATSWorkQueue(label: "nearby-bench-nats")

  static func start(first: String, second: String) async throws -> NATSBaseline {
    let work = NATSWorkQueue(label: "nearby-bench-nats-connect")
    let (a, b) = try await work.run { () throws(NATSError) in
      var one = NATSSettings(servers: [first], name: "bench-a")
      one.keepsServerOrder = true
      var two = NATSSettings(servers: [second], name: "bench-b")
      two.keepsServerOrder = true
      return (try NATSConnection.connect(one) { _ in }, try NATSConnection.connect(two) { _ in })
    }
    return NATSBaseline(first: a, second: b)
  }

  /// `NATS_NO_RESPONDERS`: a request that no subscriber could receive.
  static let noResponders: UInt32 = 34

  /// Requests from n1's client answered by n2's (a subscription that replies).
  func requestReply(_ rounds: Int) async throws -> [Duration] {
    let second = self.second
    let responder = try second.subscribe("bench.echo") { message in
      if let reply = message.reply { try? second.publish(reply, message.data) }
    }
    defer { responder.unsubscribe() }
    let first = self.first
    try await work.run { () throws(NATSError) in try second.flush() }
    return try await work.run { () throws(NATSError) -> [Duration] in
      let body = [UInt8](repeating: 0x62, count: 64)
      let clock = ContinuousClock()
      // n2 has the subscription once flushed, but n1 learns of it over the cluster route a
      // little later: until then a request finds "no responders" (status 34). Wait for it.
      let propagated = clock.now + .seconds(10)
      while true {
        do throws(NATSError) {
          _ = try first.request("bench.echo", body, timeout: .seconds(5))
          break
        } catch  where error.status == Self.noResponders && clock.now < propagated {
          usleep(50_000)
        }
      }
      var times: [Duration] = []
      let warmUp = min(20, rounds / 5)
      for index in 0..<(rounds + warmUp) {
        let start = clock.now
        _ = try first.request("bench.echo", body, timeout: .seconds(5))
        if index >= warmUp { times.append(clock.now - start) }
      }
      return times
    }
  }

  /// Core publishes from n1's client until n2's subscriber has all of them: messages per second.
  func corePublish(_ count: Int) async throws -> Double {
    let received = Arrivals()
    let probes = Arrivals()
    // Probes (1 byte) until one arrives: n1 learns of n2's subscription over the cluster route
    // a little after n2 has it, and a core publish before that reaches nobody.
    let subscription = try second.subscribe("bench.flow") { message in
      if message.data.count == 1 { probes.add() } else { received.add() }
    }
    defer { subscription.unsubscribe() }
    let first = self.first
    let second = self.second
    try await work.run { () throws(NATSError) in try second.flush() }
    let clock = ContinuousClock()
    let propagated = clock.now + .seconds(10)
    while probes.arrived == 0, clock.now < propagated {
      try await work.run { () throws(NATSError) in
        try first.publish("bench.flow", [0])
        try first.flush()
      }
      try await Task.sleep(for: .milliseconds(50))
    }
    let start = clock.now
    try await work.run { () throws(NATSError) in
      let body = [UInt8](repeating: 0x63, count: 64)
      for _ in 0..<count { try first.publish("bench.flow", body) }
      try first.flush()
    }
    try await received.wait(for: count, deadline: clock.now + .seconds(60))
    return Double(count) / (clock.now - start).seconds
  }

  /// JetStream publishes (a stream of three replicas) until every one is acknowledged.
  func jetStreamPublish(_ count: Int) async throws -> Double {
    let answered = Arrivals()
    first.onPublishAnswered { _ in answered.add() }
    let first = self.first
    let stream = StreamSettings(name: "BENCH", subjects: ["bench.stored"], maximumAge: .seconds(600), maximumBytes: 1 << 30, replicas: 3)
    try await work.run { () throws(NATSError) in
      var stream = stream
      stream.isWorkQueue = false
      try first.ensureStream(stream)
    }
    let clock = ContinuousClock()
    let start = clock.now
    try await work.run { () throws(NATSError) in
      let body = [UInt8](repeating: 0x63, count: 64)
      for index in 0..<count { try first.publishAsync("bench.stored", body, key: "\(index)", messageID: nil, maximumWait: .seconds(10)) }
    }
    try await answered.wait(for: count, deadline: clock.now + .seconds(120))
    return Double(count) / (clock.now - start).seconds
  }

  func close() {
    first.close()
    second.close()
  }
}

/// A counter that libnats's threads add to and a task waits on.
final class Arrivals: Sendable {
  private let count = Atomic<Int>(0)
  func add() { count.add(1, ordering: .relaxed) }
  var arrived: Int { count.load(ordering: .relaxed) }

  func wait(for expected: Int, deadline: ContinuousClock.Instant) async throws {
    while count.load(ordering: .relaxed) < expected {
      guard ContinuousClock.now < deadline else { throw BenchError("only \(count.load(ordering: .relaxed)) of \(expected) arrived") }
      try await Task.sleep(for: .milliseconds(1))
    }
  }
}
