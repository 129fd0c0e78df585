import NearbyCore
import NearbyCrypto
import NearbyLab
import NearbyTestSupport
import NearbyTransport
import Synchronization
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// What one connection may cost the loop: a share of each iteration in frames and bytes,
/// and connections from one source refused before anything is made for them.
@Suite("Receive limits of the transport")
struct ReceiveLimitTests {
  /// Connects a client to a listener with `limits`. - Returns: both ends and the loop.
  static func pair(limits: ReceiveLimits, server: EventCollector, client: EventCollector) async throws -> (
    EventLoop, TCPListener, TCPConnection, TCPConnection
  ) {
    let loop = try EventLoop()
    let listener = try await TCPListener.bind(
      host: "127.0.0.1", loop: loop, limits: limits, security: .ephemeral(), nextID: server.nextID, sink: server.sink)
    _ = TCPConnector.connect(
      ConnectionID(1 << 40), to: [Endpoint(host: "127.0.0.1", port: listener.port)], loop: loop, security: .ephemeral(), sink: client.sink)
    let outbound = try await client.next { if case .connected(let c) = $0 { c } else { nil } }
    let inbound = try await server.next { if case .accepted(let c) = $0 { c } else { nil } }
    _ = try await server.next { if case .authenticated = $0 { true } else { nil } }
    return (loop, listener, outbound, inbound)
  }

  @Test func aConnectionHandsOverAtMostItsShareOfFramesPerTurnAndLosesNone() async throws {
    let server = EventCollector()
    let client = EventCollector()
    let (loop, listener, outbound, inbound) = try await Self.pair(limits: ReceiveLimits(framesPerTurn: 100), server: server, client: client)
    let count = 20_000
    let results = await loop.perform { (0..<count).map { outbound.send(.ping(nonce: UInt64($0))) } }
    #expect(results?.allSatisfy { $0 == .queued } == true)
    var received: [UInt64] = []
    var largest = 0
    while received.count < count {
      let batch = try await server.next { if case .frames(_, let frames) = $0 { frames } else { nil } }
      largest = max(largest, batch.count)
      for case .ping(let nonce) in batch { received.append(nonce) }
    }
    #expect(received == (0..<count).map(UInt64.init))
    #expect(largest == 100, "the largest batch had \(largest) frames")
    outbound.close(.now)
    inbound.close(.now)
    listener.close()
    await loop.shutdown()
  }

  @Test func framesLeftAtTheEndOfATurnArriveWithoutMoreTraffic() async throws {
    let server = EventCollector()
    let client = EventCollector()
    let (loop, listener, outbound, inbound) = try await Self.pair(limits: ReceiveLimits(framesPerTurn: 7), server: server, client: client)
    // One write, one read: everything after the first 7 frames is in the decoder, and
    // nothing more will make the socket readable.
    var bytes: [UInt8] = []
    for index in 0..<50 { FrameEncoder.encode(.ping(nonce: UInt64(index)), into: &bytes) }
    let queued = await loop.perform { [bytes] in outbound.send(encoded: bytes) }
    #expect(queued == .queued)
    var received = 0
    while received < 50 {
      let batch = try await server.next { if case .frames(_, let frames) = $0 { frames } else { nil } }
      #expect(batch.count <= 7)
      received += batch.count
    }
    outbound.close(.now)
    inbound.close(.now)
    listener.close()
    await loop.shutdown()
  }

  /// A ROSTER of thousands of entries costs the loop what hundreds of small frames do: it
  /// counts so against the turn's share (four of them in one turn held a relay's loop for a
  /// second in a debug build, and under load its peers missed its pings).
  @Test func largeRostersCountByTheirEntriesAgainstATurnsShare() async throws {
    let server = EventCollector()
    let client = EventCollector()
    let (loop, listener, outbound, inbound) = try await Self.pair(limits: ReceiveLimits(framesPerTurn: 100), server: server, client: client)
    // One write: three rosters of 400 entries (100 frames' work each), then 10 pings.
    let entries = SecureTestPeer.madeUpRosterEntries(400)
    var bytes: [UInt8] = []
    for _ in 0..<3 { FrameEncoder.encode(.roster(Frame.Roster(kind: .add, entries: entries)), into: &bytes) }
    for index in 0..<10 { FrameEncoder.encode(.ping(nonce: UInt64(index)), into: &bytes) }
    let queued = await loop.perform { [bytes] in outbound.send(encoded: bytes) }
    #expect(queued == .queued)
    var batches: [[Frame]] = []
    while batches.joined().count < 13 {
      batches.append(try await server.next { if case .frames(_, let frames) = $0 { frames } else { nil } })
    }
    let rostersPerBatch = batches.map { $0.filter { if case .roster = $0 { true } else { false } }.count }
    #expect(rostersPerBatch.filter { $0 > 0 } == [1, 1, 1], "rosters per turn: \(rostersPerBatch)")
    #expect(batches.joined().compactMap { if case .ping(let nonce) = $0 { nonce } else { nil } } == Array(UInt64(0)..<10), "the pings, in order")
    #expect(Array(batches.joined().prefix(3)).allSatisfy { if case .roster(let r) = $0 { r.entries == entries } else { false } })
    outbound.close(.now)
    inbound.close(.now)
    listener.close()
    await loop.shutdown()
  }

  /// A run of reads that come back to back keeps the record layer's read buffer between messages
  /// (allocating and freeing 16 KiB for each small message was a tenth of its cost); it goes
  /// once the connection was idle from one `trimIfIdle()` to the next (the session's ticks).
  /// An occasional read frees it at once, so that hundreds of idle peers cost little.
  @Test(arguments: [true, false]) func readBuffersStayForBackToBackReadsAndGoWhenIdle(backToBack: Bool) async throws {
    let server = EventCollector()
    let client = EventCollector()
    let limits = ReceiveLimits(backToBackIterations: backToBack ? .max : 0)
    let (loop, listener, outbound, inbound) = try await Self.pair(limits: limits, server: server, client: client)
    func onLoop<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
      await withCheckedContinuation { continuation in loop.execute { continuation.resume(returning: body()) } }
    }
    // A run of reads, one message each (a request waits for its answer).
    for nonce in UInt64(1)...20 {
      let queued = await loop.perform { outbound.send(.ping(nonce: nonce)) }
      #expect(queued == .queued)
      _ = try await server.next { if case .frames(_, let frames) = $0, frames.contains(.ping(nonce: nonce)) { true } else { nil } }
    }
    guard backToBack else {
      #expect(await onLoop { inbound.recordBufferBytes } == 0, "reads far apart free the buffer at once")
      outbound.close(.now)
      inbound.close(.now)
      listener.close()
      await loop.shutdown()
      return
    }
    #expect(await onLoop { inbound.recordBufferBytes } > 0, "kept after a short read")
    #expect(
      await onLoop {
        inbound.trimIfIdle()
        return inbound.recordBufferBytes
      } > 0, "read since the last trim: kept")
    let queued = await loop.perform { outbound.send(.ping(nonce: 21)) }
    #expect(queued == .queued)
    _ = try await server.next { if case .frames(_, let frames) = $0, frames.contains(.ping(nonce: 21)) { true } else { nil } }
    #expect(
      await onLoop {
        inbound.trimIfIdle()
        return inbound.recordBufferBytes
      } > 0, "read again since: kept")
    #expect(
      await onLoop {
        inbound.trimIfIdle()
        return inbound.recordBufferBytes
      } == 0, "idle since the last trim: freed")
    // And it reads on as before.
    let queuedAgain = await loop.perform { outbound.send(.ping(nonce: 22)) }
    #expect(queuedAgain == .queued)
    _ = try await server.next { if case .frames(_, let frames) = $0, frames.contains(.ping(nonce: 22)) { true } else { nil } }
    outbound.close(.now)
    inbound.close(.now)
    listener.close()
    await loop.shutdown()
  }

  @Test func aRefusedConnectionGetsBusyAndIsNeverHandedToTheOwner() async throws {
    let loop = try EventLoop()
    let server = EventCollector()
    let listener = try await TCPListener.bind(
      host: "127.0.0.1", loop: loop, admit: { _, remote in remote.sourceKey == "127.0.0.2" ? "too many from \(remote.sourceKey)" : nil },
      security: .ephemeral(), nextID: server.nextID, sink: server.sink)
    let refused = try SecureTestPeer(port: listener.port, source: "127.0.0.2")
    let received = await refused.readInBackground()
    #expect(received.closed)
    #expect(received.frames == [.error(code: .busy, message: "too many from 127.0.0.2")])
    // Another source gets in.
    let accepted = try SecureTestPeer(port: listener.port, source: "127.0.0.3")
    let connection = try await server.next { if case .accepted(let c) = $0 { c } else { nil } }
    #expect(connection.remote.host == "127.0.0.3")
    #expect(!server.all.contains { if case .accepted = $0 { true } else { false } })
    connection.close(.now)
    _ = accepted
    listener.close()
    await loop.shutdown()
  }

  @Test(
    "the source of an address",
    arguments: [
      ("127.0.0.2", "127.0.0.2"), ("::ffff:192.0.2.7", "192.0.2.7"), ("2001:db8:1:2::5", "2001:db8:1:2::/64"),
      ("2001:db8:1:2:ffff:ffff:ffff:ffff", "2001:db8:1:2::/64"), ("fe80::1", "fe80:0:0:0::/64"), ("::1", "0:0:0:0::/64"),
    ])
  func sourceKeys(_ host: String, _ key: String) throws {
    #expect(try #require(SocketAddress(host: host, port: 1)).sourceKey == key)
  }

  /// An address turned back into an endpoint keeps the interface of a link-local IPv6 address
  /// (a reconnection starts where the peer answered: without it, dialling `fe80::…` failed).
  @Test(
    arguments: [
      Endpoint(host: "fe80::1", port: 7, interfaceIndex: 1), Endpoint(host: "2001:db8::5", port: 8), Endpoint(host: "192.0.2.7", port: 9),
    ])
  func anEndpointRoundTripsThroughItsSocketAddress(_ endpoint: Endpoint) throws {
    #expect(try #require(SocketAddress(endpoint)).endpoint == endpoint)
  }
}
