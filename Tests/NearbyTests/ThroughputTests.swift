import Nearby
import NearbyTestSupport
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
}
