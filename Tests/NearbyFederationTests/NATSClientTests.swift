import Foundation
import NearbyFederation
import NearbyLab
import NearbyTestSupport
import Testing

/// The libnats wrapper against real nats-server processes, started inside the harness's
/// private namespace on loopback. One test at a time: each starts servers of its own.
@Suite("NATS through libnats (real nats-server on loopback)", .serialized, .enabled(if: NATSFixture.available, NATSFixture.reason))
struct NATSClientTests {
  let work = NATSWorkQueue(label: "nats-test")

  func connect(_ cluster: NATSServerCluster, events: Collected<NATSConnectionEvent>) async throws -> NATSConnection {
    let urls = cluster.plan.clientURLs
    let connection = try await work.run { () throws(NATSError) in
      try NATSConnection.connect(NATSSettings(servers: urls, name: "test"), onEvent: events.handler)
    }
    _ = try await events.next("connected") { if case .connected(let url) = $0 { url } else { nil } }
    return connection
  }

  /// Runs `body` on the work queue until it succeeds (JetStream requests fail while the
  /// cluster elects its leaders), for up to 10 s.
  func eventually<T: Sendable>(_ body: @escaping @Sendable () throws(NATSError) -> T) async throws -> T {
    let deadline = ContinuousClock.now + .seconds(10)
    while true {
      do {
        return try await work.run(body)
      } catch {
        if ContinuousClock.now > deadline { throw error }
      }
      try await Task.sleep(for: .milliseconds(250))
    }
  }

  @Test func aWorkQueueDeliversWhatIsPublishedUntilItIsAcknowledgedAlsoToARecreatedConsumer() async throws {
    try await NATSFixture.withServers(1) { cluster in
      let events = Collected<NATSConnectionEvent>()
      let connection = try await connect(cluster, events: events)
      defer { connection.close() }
      let answers = Collected<NATSPublishResult>()
      connection.onPublishAnswered(answers.handler)
      let stream = StreamSettings(name: "T", subjects: ["t.peer.*"], maximumAge: .seconds(60), maximumBytes: 1 << 20, replicas: 3)
      let replicas = try await work.run { () throws(NATSError) in try connection.ensureStream(stream) }
      #expect(replicas == 1, "a single server that is not clustered keeps one replica")

      for n in 1...3 {
        try connection.publishAsync("t.peer.a", Array("m\(n)".utf8), key: "k\(n)", messageID: "id\(n)", maximumWait: .seconds(5))
      }
      // The same message id again: stored once.
      try connection.publishAsync("t.peer.a", Array("m1".utf8), key: "again", messageID: "id1", maximumWait: .seconds(5))
      for key in ["k1", "k2", "k3"] {
        let result = try await answers.next("answer \(key)") { $0.key == key ? $0 : nil }
        #expect(result.failure == nil && !result.duplicate && result.sequence > 0)
      }
      let again = try await answers.next("answer again") { $0.key == "again" ? $0 : nil }
      #expect(again.duplicate)

      let deliveries = Collected<NATSMessage>()
      let subscription = try connection.subscribe("t.deliver.a", deliveries.handler)
      var consumer = PushConsumerSettings(stream: "T", name: "peer-a", filterSubject: "t.peer.a", deliverSubject: "t.deliver.a")
      consumer.acknowledgementWait = .seconds(30)
      let firstConsumer = consumer
      try await work.run { () throws(NATSError) in try connection.addPushConsumer(firstConsumer) }
      var seen: [String] = []
      for _ in 1...3 {
        let message = try await deliveries.next("delivery") { $0 }
        seen.append(String(decoding: message.data, as: UTF8.self))
        let delivery = try #require(message.delivery)
        #expect(delivery.stream == "T" && delivery.consumer == "peer-a" && delivery.deliveries == 1)
        // Only the first is acknowledged.
        if seen.count == 1 { try connection.publish(message.reply!, Array("+ACK".utf8)) }
      }
      #expect(seen == ["m1", "m2", "m3"])
      try await work.run { () throws(NATSError) in try connection.flush() }
      // A new consumer (what a relay does when the peer arrives): the unacknowledged two again, in order.
      subscription.unsubscribe()
      try await work.run { () throws(NATSError) in
        try connection.deleteConsumer(stream: "T", name: "peer-a")
        try connection.deleteConsumer(stream: "T", name: "peer-a")  // not there: no error
      }
      consumer.deliverSubject = "t.deliver.a2"
      let again2 = Collected<NATSMessage>()
      let second = try connection.subscribe("t.deliver.a2", again2.handler)
      defer { second.unsubscribe() }
      let secondConsumer = consumer
      try await work.run { () throws(NATSError) in try connection.addPushConsumer(secondConsumer) }
      let first = try await again2.next("redelivery") { String(decoding: $0.data, as: UTF8.self) }
      let next = try await again2.next("redelivery") { String(decoding: $0.data, as: UTF8.self) }
      #expect([first, next] == ["m2", "m3"])
      connection.close()
      _ = try await events.next("closed") { $0 == .closed ? true : nil }
    }
  }

  @Test func aKeyValueWatchGivesCurrentValuesThenChanges() async throws {
    try await NATSFixture.withServers(1) { cluster in
      let events = Collected<NATSConnectionEvent>()
      let connection = try await connect(cluster, events: events)
      defer { connection.close() }
      let bucket = try await work.run { () throws(NATSError) in
        let bucket = try NATSKeyValue(bucket: "presence", ttl: .seconds(60), replicas: 3, on: connection)
        try bucket.put("peer.a", Array("alice".utf8))
        return bucket
      }
      let changes = Collected<NATSKeyValueChange>()
      let watch = try bucket.watchAll(changes.handler)
      let initial = try await changes.next("initial value") {
        if case .put(let key, let value, _, _) = $0 { "\(key)=\(String(decoding: value, as: UTF8.self))" } else { nil }
      }
      #expect(initial == "peer.a=alice")
      _ = try await changes.next("initial values done") { $0 == .initialValuesDone ? true : nil }
      try await work.run { () throws(NATSError) in
        try bucket.put("peer.b", Array("bob".utf8))
        try bucket.delete("peer.a")
      }
      let put = try await changes.next("put") { if case .put(let key, _, let created, _) = $0 { (key, created) } else { nil } }
      #expect(put.0 == "peer.b" && put.1 > 0)
      let deleted = try await changes.next("delete") { if case .deleted(let key) = $0 { key } else { nil } }
      #expect(deleted == "peer.a")
      try await work.run { watch.stop() }
      _ = try await changes.next("stopped") { $0 == .stopped ? true : nil }
    }
  }

  @Test func whenTheServerItUsesIsKilledTheClientFailsOverAndAReplicatedStreamKeepsWorking() async throws {
    try await NATSFixture.withServers(3) { cluster in
      let events = Collected<NATSConnectionEvent>()
      let connection = try await connect(cluster, events: events)
      defer { connection.close() }
      let answers = Collected<NATSPublishResult>()
      connection.onPublishAnswered(answers.handler)
      let stream = StreamSettings(name: "R", subjects: ["r.*"], maximumAge: .seconds(60), maximumBytes: 1 << 20, replicas: 3)
      // The cluster elects its JetStream leader a moment after the servers listen.
      let replicas = try await eventually { () throws(NATSError) in try connection.ensureStream(stream) }
      #expect(replicas == 3)
      try connection.publishAsync("r.x", [1], key: "before", messageID: nil, maximumWait: .seconds(5))
      let before = try await answers.next("before") { $0.key == "before" ? $0 : nil }
      #expect(before.failure == nil)
      let server = try #require(connection.connectedServer)
      let index = try #require(cluster.plan.clientURLs.firstIndex { server.hasSuffix(":" + ($0.split(separator: ":").last ?? "")) })
      await cluster.kill(index)
      _ = try await events.next(within: .seconds(15), "reconnected") { if case .reconnected(let url) = $0 { url } else { nil } }
      #expect(connection.connectedServer != server)
      var stored = false
      var attempt = 0
      while !stored && attempt < 40 {
        attempt += 1
        let key = "after\(attempt)"
        try connection.publishAsync("r.x", [2], key: key, messageID: "after", maximumWait: .seconds(2))
        let answer = try await answers.next(within: .seconds(5), "after") { $0.key == key ? $0 : nil }
        stored = answer.failure == nil
        if !stored { try await Task.sleep(for: .milliseconds(250)) }
      }
      #expect(stored, "a replicated stream takes messages with one of three servers down")
    }
  }
}

/// TLS to the NATS servers (`--nats-tls-ca`): a server whose certificate the given CA signed
/// is reached; one signed by another CA, or one that speaks no TLS, never is (no fallback to
/// a plain connection); a client without the CA cannot reach a server that requires TLS.
@Suite("NATS over TLS (real nats-server, certificates made with openssl)", .serialized, .enabled(if: NATSFixture.available, NATSFixture.reason))
struct NATSTLSTests {
  let work = NATSWorkQueue(label: "nats-tls-test")

  /// Connects with `settings` and collects the connection's events for a moment.
  func attempt(_ settings: NATSSettings) async throws -> (connection: NATSConnection?, events: Collected<NATSConnectionEvent>, error: NATSError?) {
    let events = Collected<NATSConnectionEvent>()
    do {
      let connection = try await work.run { () throws(NATSError) in try NATSConnection.connect(settings, onEvent: events.handler) }
      return (connection, events, nil)
    } catch {
      return (nil, events, error)
    }
  }

  @Test func aServerSignedByTheTrustedCAIsReachedAndNoOtherIs() async throws {
    let pki = try await TestCertificates.make()
    defer { pki.remove() }
    try await NATSFixture.withServers(1, tls: pki.server) { cluster in
      var settings = NATSSettings(servers: cluster.plan.clientURLs, name: "tls")
      settings.trustedCertificatesFile = pki.authority
      let trusted = try await attempt(settings)
      let connection = try #require(trusted.connection, "\(String(describing: trusted.error))")
      defer { connection.close() }
      _ = try await trusted.events.next("connected over TLS") { if case .connected = $0 { true } else { nil } }
      let received = Collected<NATSMessage>()
      let subscription = try connection.subscribe("t.tls", received.handler)
      try await work.run { () throws(NATSError) in try connection.flush() }
      try connection.publish("t.tls", Array("over tls".utf8))
      let message = try await received.next("the message back") { $0 }
      #expect(message.data == Array("over tls".utf8))
      subscription.unsubscribe()

      // A CA that did not sign the server's certificate: refused.
      settings.trustedCertificatesFile = pki.otherAuthority
      let untrusted = try await attempt(settings)
      try await expectNeverConnected(untrusted, "a server certificate signed by another CA")

      // No CA given: a plain client cannot reach a server that requires TLS.
      settings.trustedCertificatesFile = nil
      let plain = try await attempt(settings)
      try await expectNeverConnected(plain, "a plain client against a TLS server")
    }
  }

  @Test func requiringTLSNeverFallsBackToAPlainConnection() async throws {
    let pki = try await TestCertificates.make()
    defer { pki.remove() }
    try await NATSFixture.withServers(1) { cluster in
      var settings = NATSSettings(servers: cluster.plan.clientURLs, name: "tls")
      settings.trustedCertificatesFile = pki.authority
      try await expectNeverConnected(try await attempt(settings), "a server without TLS")
    }
  }

  /// Either the connect call failed, or it is still trying after a while and never said
  /// `connected`.
  func expectNeverConnected(
    _ outcome: (connection: NATSConnection?, events: Collected<NATSConnectionEvent>, error: NATSError?), _ what: String
  ) async throws {
    guard let connection = outcome.connection else {
      #expect(outcome.error != nil, "\(what)")
      return
    }
    defer { connection.close() }
    try await Task.sleep(for: .seconds(2))
    #expect(!connection.isConnected, "\(what): connected")
    #expect(!outcome.events.recorder.all.contains { if case .connected = $0 { true } else { false } }, "\(what): \(outcome.events.recorder.all)")
  }
}

/// A test CA, a server certificate for 127.0.0.1 that it signs, and a second CA that signs
/// nothing, made with openssl in a temporary directory.
struct TestCertificates {
  let directory: String
  var authority: String { directory + "/ca.pem" }
  var otherAuthority: String { directory + "/other-ca.pem" }
  var server: NATSTLSFiles { NATSTLSFiles(certificate: directory + "/server.pem", key: directory + "/server.key") }

  static func make() async throws -> TestCertificates {
    let directory = Repository.temporaryDirectory("nearby-tls")
    let pki = TestCertificates(directory: directory)
    try "subjectAltName=IP:127.0.0.1\n".write(toFile: directory + "/san.cnf", atomically: true, encoding: .utf8)
    let key = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    let steps: [[String]] = [
      ["req", "-x509"] + key + ["-keyout", directory + "/ca.key", "-out", pki.authority, "-days", "1", "-subj", "/CN=nearby test CA"],
      ["req", "-x509"] + key + ["-keyout", directory + "/other-ca.key", "-out", pki.otherAuthority, "-days", "1", "-subj", "/CN=another CA"],
      ["req"] + key + ["-keyout", pki.server.key, "-out", directory + "/server.csr", "-subj", "/CN=127.0.0.1"],
      [
        "x509", "-req", "-in", directory + "/server.csr", "-CA", pki.authority, "-CAkey", directory + "/ca.key", "-CAcreateserial", "-out",
        pki.server.certificate, "-days", "1", "-extfile", directory + "/san.cnf",
      ],
    ]
    for step in steps {
      let result = try await run(["/usr/bin/openssl"] + step)
      guard result.status == 0 else { throw WaitError(description: "openssl \(step.joined(separator: " ")) failed: \(result.output)") }
    }
    return pki
  }

  func remove() { try? FileManager.default.removeItem(atPath: directory) }
}
