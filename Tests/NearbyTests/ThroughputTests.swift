import Nearby
import NearbyTestSupport
import Synchronization
import Testing

@Suite("Many messages")
struct ThroughputTests {
  static func session(_ name: String, queue: Int) throws -> NearbySession {
    var configuration = SessionConfiguration(peer: Peer(id: PeerID.random(), name: try DisplayName(name)))
    configuration.advertise = false
    configuration.browse = false
    configuration.listenHost = "127.0.0.1"
    configuration.acceptPolicy = .all
    configuration.maximumQueuedBytes = queue
    return try NearbySession(configuration: configuration)
  }

  @Test func aHundredThousandSmallMessagesArriveInOrderWithBackpressure() async throws {
    let alice = try Self.session("alice", queue: 256 * 1024)
    let bob = try Self.session("bob", queue: 256 * 1024)
    let runs = [Task { try await alice.run() }, Task { try await bob.run() }]
    let port = try #require(await bob.waitUntilListening())
    _ = await alice.waitUntilListening()
    let count = 100_000
    let receiver = Task { () -> Int in
      var received = 0
      var last: UInt64 = 0
      for await event in bob.events {
        if case .message(let message) = event {
          if message.id <= last { return -1 }
          last = message.id
          received += 1
          if received == count { break }
        }
      }
      return received
    }
    var aliceEvents = alice.events.makeAsyncIterator()
    await alice.invite(endpoints: [Endpoint(host: "127.0.0.1", port: port)])
    while let event = await aliceEvents.next() {
      if case .connected = event { break }
    }
    let delivered = Task {
      var count = 0
      var failures = 0
      while count + failures < 100_000, let event = await aliceEvents.next() {
        if case .delivered = event { count += 1 }
        if case .error = event { failures += 1 }
      }
      return (count, failures)
    }
    for index in 0..<count {
      await alice.sendWhenWritable([UInt8(index & 0xFF)], to: .peers([bob.configuration.peer.id]))
    }

    #expect(await receiver.value == count)
    let (confirmed, failures) = await delivered.value
    await alice.shutdown()
    await bob.shutdown()
    #expect(confirmed == count)
    #expect(failures == 0, "waiting sends must never be refused")
    for run in runs { try await run.value }
  }

  /// `send` writes straight to an idle connection from the caller's thread and queues
  /// otherwise; mixed with waiting sends and sends to everyone, order and acknowledgement
  /// must hold across both paths.
  @Test func sendsTakingTheDirectAndTheQueuedPathStayInOrderAndAreAllAcknowledged() async throws {
    let alice = try await RunningSession.start("alice") { $0.maximumQueuedBytes = 16 << 20 }
    let bob = try await RunningSession.start("bob")
    try await connect(alice, bob)
    let count = 20_000
    let received = Mutex<[UInt64]>([])
    bob.session.setEventHandler { event in
      if case .message(let message) = event { received.withLock { $0.append(message.id) } }
    }
    var sent: [UInt64] = []
    for index in 0..<count {
      let body = [UInt8](repeating: UInt8(index & 0xFF), count: 1 + index % 200)
      switch index % 7 {
      case 0: sent.append(await alice.session.sendWhenWritable(body, to: .peers([bob.peer.id])))
      case 3: sent.append(alice.session.send(body, to: .all))
      default: sent.append(alice.session.send(body, to: .peers([bob.peer.id])))
      }
      // Now and then a pause, so the connection goes idle and the direct path is taken.
      if index % 1000 == 999 { try await Task.sleep(for: .milliseconds(2)) }
    }
    func delivered() -> Int { alice.events.all.count { if case .delivered = $0 { true } else { false } } }
    let deadline = ContinuousClock.now + .seconds(60)
    while received.withLock({ $0.count }) < count || delivered() < count, ContinuousClock.now < deadline {
      try await Task.sleep(for: .milliseconds(20))
    }
    #expect(received.withLock { $0 } == sent, "every message arrives once, in the order it was sent")
    #expect(delivered() == count)
    #expect(!alice.events.all.contains { if case .error = $0 { true } else { false } })
    try await alice.stop()
    try await bob.stop()
  }

  @Test func anEventHandlerGetsTheEventsInsteadOfTheStreamUntilItIsRemoved() async throws {
    let alice = try await RunningSession.start("alice")
    let bob = try await RunningSession.start("bob")
    try await connect(alice, bob)
    let seen = Mutex<[String]>([])
    bob.session.setEventHandler { event in
      if case .message(let message) = event { seen.withLock { $0.append(String(decoding: message.body, as: UTF8.self)) } }
    }
    let texts = (0..<100).map { "message \($0)" }
    for text in texts { alice.session.send(Array(text.utf8), to: .peers([bob.peer.id])) }
    let deadline = ContinuousClock.now + .seconds(10)
    while seen.withLock({ $0.count }) < texts.count, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(5)) }
    #expect(seen.withLock { $0 } == texts)
    #expect(!bob.events.all.contains { if case .message = $0 { true } else { false } }, "the stream gets none while a handler is set")
    bob.session.setEventHandler(nil)
    alice.session.send(Array("after".utf8), to: .peers([bob.peer.id]))
    let body = try await bob.expect("the message after the handler is removed") { if case .message(let m) = $0 { m.body } else { nil } }
    #expect(String(decoding: body, as: UTF8.self) == "after")
    #expect(seen.withLock { $0.count } == texts.count)
    try await alice.stop()
    try await bob.stop()
  }

  /// A refused send is reported to the handler on the sending thread; the handler may send
  /// again from there (the refusal is published after the send path's lock is released).
  @Test(.timeLimit(.minutes(1)))
  func anEventHandlerMaySendAgainWhenASendIsRefused() async throws {
    let alice = try await RunningSession.start("alice") { $0.maximumQueuedBytes = 64 * 1024 }
    // Connects, is accepted, and never reads: alice's queue for it fills up.
    let silent = try SilentPeer(connectingTo: alice.port)
    let peer = try await alice.expect("connected") { if case .connected(let p) = $0 { p } else { nil } }
    let refusals = Mutex(0)
    let session = alice.session
    session.setEventHandler { event in
      guard case .error(.undelivered(_, _, _, let reason)) = event, case .queueFull = reason else { return }
      if refusals.withLock({ count in
        count += 1
        return count == 1
      }) {
        session.send([1], to: .peers([peer.id]))
      }
    }
    let body = [UInt8](repeating: 7, count: 65_536)
    var sent = 0
    while refusals.withLock({ $0 }) == 0, sent < 5000 {
      session.send(body, to: .peers([peer.id]))
      sent += 1
    }
    #expect(refusals.withLock { $0 } == 2, "the send refused first, then the handler's own")
    _ = silent
    session.setEventHandler(nil)
    try await alice.stop()
  }
}
