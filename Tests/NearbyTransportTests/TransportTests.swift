// One file: one suite, the transport on real loopback sockets (connections, the connector,
// the listener, bounded queues, closing, the loop's timers and shutdown), whose tests share
// the suite's collectors and set-up; split by topic, each part would repeat them.

import CNearbySystem
import Foundation
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

@Suite("TCP transport on loopback (real sockets)")
struct TransportTests {
  /// The owner stops reading a connection while its application is behind: nothing more
  /// arrives (TCP pushes back on the sender), and everything arrives once reading resumes.
  @Test func pausedReadingDeliversNothingUntilResumed() async throws {
    let loop = try EventLoop()
    let server = EventCollector()
    let client = EventCollector()
    let listener = try await TCPListener.bind(host: "127.0.0.1", loop: loop, security: .ephemeral(), nextID: server.nextID, sink: server.sink)
    _ = TCPConnector.connect(
      ConnectionID(1 << 40), to: [Endpoint(host: "127.0.0.1", port: listener.port)], loop: loop, security: .ephemeral(), sink: client.sink)
    let outbound = try await client.next { if case .connected(let c) = $0 { c } else { nil } }
    let inbound = try await server.next { if case .accepted(let c) = $0 { c } else { nil } }
    await withCheckedContinuation { done in
      loop.execute {
        inbound.pauseReading()
        done.resume()
      }
    }
    _ = await loop.perform { for index in 0..<100 { _ = outbound.send(.ping(nonce: UInt64(index))) } }
    try await Task.sleep(for: .milliseconds(300))
    #expect(server.all.allSatisfy { if case .frames = $0 { false } else { true } }, "frames arrived while reading was paused")
    await withCheckedContinuation { done in
      loop.execute {
        #expect(inbound.isReadingPaused)
        inbound.resumeReading()
        done.resume()
      }
    }
    var received: [UInt64] = []
    while received.count < 100 {
      let batch = try await server.next { if case .frames(_, let frames) = $0 { frames } else { nil } }
      for case .ping(let nonce) in batch { received.append(nonce) }
    }
    #expect(received == (0..<100).map(UInt64.init))
    outbound.close(.now)
    inbound.close(.now)
    listener.close()
    await loop.shutdown()
  }

  @Test func framesTravelBothWaysInOrder() async throws {
    let loop = try EventLoop()
    let server = EventCollector()
    let client = EventCollector()
    let listener = try await TCPListener.bind(host: "127.0.0.1", loop: loop, security: .ephemeral(), nextID: server.nextID, sink: server.sink)
    _ = TCPConnector.connect(
      ConnectionID(1 << 40), to: [Endpoint(host: "127.0.0.1", port: listener.port)], loop: loop, security: .ephemeral(), sink: client.sink)
    let outbound = try await client.next { if case .connected(let c) = $0 { c } else { nil } }
    let inbound = try await server.next { if case .accepted(let c) = $0 { c } else { nil } }
    #expect(outbound.remote.port == listener.port)

    let count = 20_000
    // Queued on the loop (only its thread touches a connection), in one go.
    let results = await loop.perform { (0..<count).map { outbound.send(.ping(nonce: UInt64($0))) } }
    #expect(results?.allSatisfy { $0 == .queued } == true)
    var received: [UInt64] = []
    var batches = 0
    while received.count < count {
      let batch = try await server.next { if case .frames(_, let frames) = $0 { frames } else { nil } }
      batches += 1
      for case .ping(let nonce) in batch { received.append(nonce) }
    }
    #expect(received == (0..<count).map(UInt64.init))
    // Many frames per read: the writes were coalesced.
    #expect(batches < count / 10)

    let queued = await loop.perform { inbound.send(.pong(nonce: 99)) }
    #expect(queued == .queued)
    let reply = try await client.next { if case .frames(_, let frames) = $0 { frames } else { nil } }
    #expect(reply == [.pong(nonce: 99)])
    outbound.close(.now)
    inbound.close(.now)
    listener.close()
    await loop.shutdown()
  }

  @Test func connectTriesEachEndpointAndReportsEveryFailure() async throws {
    let loop = try EventLoop()
    let collector = EventCollector()
    // A port nobody listens on, and nobody can take while the test runs: bound, not listening.
    let (dead, deadPort) = try LoopbackSocket.refusing()
    defer { close(dead) }
    let listener = try await TCPListener.bind(host: "127.0.0.1", loop: loop, security: .ephemeral(), nextID: collector.nextID, sink: collector.sink)
    _ = TCPConnector.connect(
      ConnectionID(1 << 40),
      to: [Endpoint(host: "not-an-address", port: 1), Endpoint(host: "127.0.0.1", port: deadPort), Endpoint(host: "127.0.0.1", port: listener.port)],
      loop: loop, security: .ephemeral(), sink: collector.sink)
    let connection = try await collector.next { if case .connected(let c) = $0 { c } else { nil } }
    #expect(connection.remote.port == listener.port)
    connection.close(.now)

    _ = TCPConnector.connect(
      ConnectionID(2 << 40), to: [Endpoint(host: "127.0.0.1", port: deadPort)], loop: loop, security: .ephemeral(), sink: collector.sink)
    let failure = try await collector.next { if case .connectFailed(_, let detail) = $0 { detail } else { nil } }
    #expect(failure.contains("Connection refused"))
    #expect(failure.contains("127.0.0.1:\(deadPort)"))
    listener.close()
    await loop.shutdown()
  }

  /// An endpoint where another peer's key answers (a forged DNS-SD record pointing at another
  /// host), or where nothing completes the handshake, is given up while other endpoints
  /// remain: the connector reports only the connection to the peer it meant to reach. (It
  /// reported the first, whose handshake then failed, and the attempt ended there.)
  @Test func anEndpointWhoseHandshakeFailsIsPassedOverWhileOthersRemain() async throws {
    let loop = try EventLoop()
    let collector = EventCollector()
    let wrong = EventCollector()
    let right = ConnectionSecurity.ephemeral()
    let impostor = try await TCPListener.bind(host: "127.0.0.1", loop: loop, security: .ephemeral(), nextID: wrong.nextID, sink: wrong.sink)
    let (silent, silentPort) = try LoopbackSocket.listening(backlog: 4)  // accepts, never answers
    defer { close(silent) }
    let listener = try await TCPListener.bind(host: "127.0.0.1", loop: loop, security: right, nextID: collector.nextID, sink: { _ in })
    _ = TCPConnector.connect(
      ConnectionID(1 << 40),
      to: [
        Endpoint(host: "127.0.0.1", port: impostor.port), Endpoint(host: "127.0.0.1", port: silentPort),
        Endpoint(host: "127.0.0.1", port: listener.port),
      ],
      loop: loop, timeout: .seconds(2), security: .ephemeral(), expecting: right.identity.peerID, sink: collector.sink)
    let connection = try await collector.next { if case .connected(let c) = $0 { c } else { nil } }
    #expect(connection.remote.port == listener.port)
    let peer = try await collector.next { if case .authenticated(_, let p) = $0 { p } else { nil } }
    #expect(peer.peerID == right.identity.peerID)
    #expect(!collector.all.contains { if case .securityFailed = $0 { true } else { false } }, "\(collector.all)")
    #expect(!collector.all.contains { if case .connected = $0 { true } else { false } }, "one connection reported")
    connection.close(.now)

    // When every endpoint fails, the failure names each.
    let (dead, deadPort) = try LoopbackSocket.refusing()
    defer { close(dead) }
    _ = TCPConnector.connect(
      ConnectionID(2 << 40),
      to: [
        Endpoint(host: "127.0.0.1", port: impostor.port), Endpoint(host: "127.0.0.1", port: silentPort), Endpoint(host: "127.0.0.1", port: deadPort),
      ],
      loop: loop, timeout: .seconds(2), security: .ephemeral(), expecting: right.identity.peerID, sink: collector.sink)
    let failure = try await collector.next { if case .connectFailed(_, let detail) = $0 { detail } else { nil } }
    #expect(failure.contains("127.0.0.1:\(impostor.port): "), "\(failure)")
    #expect(failure.contains("another peer answered at that address"), "\(failure)")
    #expect(failure.contains("127.0.0.1:\(silentPort): accepted the connection but did not complete the handshake"), "\(failure)")
    #expect(failure.contains("127.0.0.1:\(deadPort): ") && failure.contains("Connection refused"), "\(failure)")

    // The last endpoint is reported as before: connected, then its handshake's failure.
    _ = TCPConnector.connect(
      ConnectionID(3 << 40), to: [Endpoint(host: "127.0.0.1", port: impostor.port)], loop: loop, security: .ephemeral(),
      expecting: right.identity.peerID, sink: collector.sink)
    let last = try await collector.next { if case .connected(let c) = $0, c.id == ConnectionID(3 << 40) { c } else { nil } }
    _ = try await collector.next { if case .securityFailed(let id, _) = $0, id == last.id { true } else { nil } }
    last.close(.now)
    impostor.close()
    listener.close()
    await loop.shutdown()
  }

  @Test func aPeerThatDoesNotReadFillsTheBoundedQueue() async throws {
    let loop = try EventLoop()
    let server = EventCollector()
    let listener = try await TCPListener.bind(
      host: "127.0.0.1", loop: loop, maximumQueuedBytes: 256 * 1024, security: .ephemeral(), nextID: server.nextID, sink: server.sink)
    let peer = try SecureTestPeer(port: listener.port)  // authenticates, then never reads
    try await peer.handshakeInBackground(payload: [])
    let inbound = try await server.next { if case .accepted(let c) = $0 { c } else { nil } }
    _ = try await server.next { if case .authenticated = $0 { true } else { nil } }
    let body = [UInt8](repeating: 0x42, count: 60_000)
    var results: [TCPConnection.QueueResult] = []
    for index in 0..<400 {
      let message = Frame.Message(id: UInt64(index), sender: PeerID.random(), timestamp: 0, recipients: [], body: body)
      let result = await loop.perform { inbound.send(message: message) }
      results.append(try #require(result))
      if results.last == .full { break }
      try await Task.sleep(for: .milliseconds(1))
    }
    // The socket buffers fill, then the queue, then the sender is told.
    #expect(results.last == .full)
    #expect(results.count > 5, "the socket took some before the queue filled")
    let queuedBytes = try #require(await loop.perform { inbound.queuedBytes })
    #expect(queuedBytes <= 256 * 1024 + 60_100)
    inbound.close(.now)
    let queued = await loop.perform { inbound.send(.ping(nonce: 1)) }
    #expect(queued == .closed)
    listener.close()
    await loop.shutdown()
  }

  /// Bytes that are not a handshake (an HTTP request) fail the handshake from the length
  /// prefix alone, with a plaintext ERROR; nothing is decoded as frames.
  @Test func garbageFailsTheHandshakeWithAPlaintextError() async throws {
    let loop = try EventLoop()
    let server = EventCollector()
    let listener = try await TCPListener.bind(host: "127.0.0.1", loop: loop, security: .ephemeral(), nextID: server.nextID, sink: server.sink)
    let raw = try RawClient(port: listener.port)
    raw.write(Array("GET / HTTP/1.1\r\nHost: x\r\n\r\n".utf8))
    let connection = try await server.next { if case .accepted(let c) = $0 { c } else { nil } }
    let failure = try await server.next { if case .securityFailed(_, let f) = $0 { f } else { nil } }
    #expect(failure.description.contains("frameTooLarge"), "\(failure)")
    #expect(!server.all.contains { if case .frames = $0 { true } else { false } })
    connection.close(.shutdownAndLinger)
    let answer = await Task.detached { frames(in: raw.readAll()) }.value
    #expect(answer.first.map { if case .error(.frameTooLarge, _) = $0 { true } else { false } } == true, "\(answer)")
    listener.close()
    await loop.shutdown()
  }

  /// A record stream cut in the middle of a record is reported truncated; what came in whole
  /// records before is delivered.
  @Test func endOfStreamInsideARecordIsReportedTruncated() async throws {
    let loop = try EventLoop()
    let server = EventCollector()
    let listener = try await TCPListener.bind(host: "127.0.0.1", loop: loop, security: .ephemeral(), nextID: server.nextID, sink: server.sink)
    let peer = try SecureTestPeer(port: listener.port)
    try await peer.handshakeInBackground(payload: [])
    peer.write(.ping(nonce: 7))
    let second = peer.sealedRecord(FrameEncoder.encode(.ping(nonce: 8)))
    peer.writeRaw(Array(second.prefix(10)))
    peer.shutdownWrite()
    let detail = try await server.next { if case .closed(_, let detail) = $0 { detail } else { nil } }
    #expect(detail.contains("without a CLOSE record"), "\(detail)")
    let delivered = server.all.flatMap { event -> [Frame] in if case .frames(_, let frames) = event { frames } else { [] } }
    #expect(delivered == [.ping(nonce: 7)])
    listener.close()
    await loop.shutdown()
  }

  /// Whole records that end in the middle of a frame, then CLOSE: the frame decoder reports it.
  @Test func endOfStreamInsideAFrameIsReportedTruncated() async throws {
    let loop = try EventLoop()
    let server = EventCollector()
    let listener = try await TCPListener.bind(host: "127.0.0.1", loop: loop, security: .ephemeral(), nextID: server.nextID, sink: server.sink)
    let peer = try SecureTestPeer(port: listener.port)
    try await peer.handshakeInBackground(payload: [])
    let ping = FrameEncoder.encode(.ping(nonce: 7))
    peer.writeSealed(ping + ping.prefix(6))
    peer.finish()
    let detail = try await server.next { if case .closed(_, let detail) = $0 { detail } else { nil } }
    #expect(detail.contains("middle of a frame"), "\(detail)")
    listener.close()
    await loop.shutdown()
  }

  @Test func shutdownAndLingerDeliversEverythingThenCloseAndEOF() async throws {
    let loop = try EventLoop()
    let server = EventCollector()
    let listener = try await TCPListener.bind(host: "127.0.0.1", loop: loop, security: .ephemeral(), nextID: server.nextID, sink: server.sink)
    let peer = try SecureTestPeer(port: listener.port)
    let inbound = try await server.next { if case .accepted(let c) = $0 { c } else { nil } }
    // Queued before the handshake completes: sealed and sent once it does.
    let refused = await loop.perform {
      for index in 0..<1000 { _ = inbound.send(.ping(nonce: UInt64(index))) }
      _ = inbound.send(.goodbye(.shuttingDown))
      inbound.close(.shutdownAndLinger)
      return inbound.send(.ping(nonce: 1))
    }
    #expect(refused == .closed)
    try await peer.handshakeInBackground(payload: [])
    let received = await peer.readInBackground()
    #expect(received.frames.count == 1001)
    #expect(received.frames.last == .goodbye(.shuttingDown))
    #expect(received.closeRecord, "the last record is CLOSE")
    #expect(received.closed)
    #expect(received.error == nil)
    peer.shutdownWrite()
    let detail = try await server.next { if case .closed(_, let detail) = $0 { detail } else { nil } }
    #expect(detail.contains("closed"))
    listener.close()
    await loop.shutdown()
  }

  /// A listener bound on a loop that has stopped: an error that says so. (The loop drops the
  /// work that would register it, and the bind used to wait for it for ever.)
  @Test func bindingOnAStoppedLoopFailsAndSaysWhy() async throws {
    let loop = try EventLoop()
    await loop.shutdown()
    let collector = EventCollector()
    await #expect {
      try await TCPListener.bind(host: "127.0.0.1", loop: loop, security: .ephemeral(), nextID: collector.nextID, sink: collector.sink)
    } throws: { error in
      "\(error)".contains("the session's event loop has stopped")
    }
  }

  /// What the loop thread queues while the loop stops still runs before it ends (a connection
  /// that a handler of the last iteration closed at once stayed open, its close dropped).
  @Test func workTheLoopQueuesWhileItStopsStillRuns() async throws {
    let loop = try EventLoop()
    final class Flag: Sendable {
      let value = Atomic<Bool>(false)
      var isSet: Bool { value.load(ordering: .relaxed) }
    }
    let ran = Flag()
    let dropped = Flag()
    loop.execute {
      while !loop.isStopping { usleep(100) }
      loop.execute { ran.value.store(true, ordering: .relaxed) }
    }
    await loop.shutdown()
    #expect(ran.isSet, "the loop's own closure, queued as it stopped, did not run")
    // Another thread's work is still refused once the loop stopped.
    loop.execute { dropped.value.store(true, ordering: .relaxed) }
    #expect(!dropped.isSet)
  }

  @Test func shuttingDownLeavesNoThreadOrDescriptorBehind() async {
    // In a child process, so that no other test's sockets or threads blur the count. The
    // child exits 0 and says what it found on stderr ("verdict: ..."): a failed exit test
    // returns nothing of what its child wrote, and a failed set-up (exit 2, seen twice in
    // parallel runs) could not be told apart.
    let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
      func verdict(_ text: String) -> Never {
        let line = "verdict: \(text)\n"
        _ = line.withCString { write(2, $0, strlen($0)) }
        exit(0)
      }
      // Let the concurrency runtime open its own descriptors (timers) first.
      try await Task.sleep(for: .milliseconds(5))
      let fdsBefore = openFileDescriptors()
      let threadsBefore = threadCount(named: "nearby-io")
      let loop = try EventLoop()
      let collector = EventCollector()
      let listener = try await TCPListener.bind(host: "127.0.0.1", loop: loop, security: .ephemeral(), nextID: collector.nextID, sink: collector.sink)
      _ = TCPConnector.connect(
        ConnectionID(1 << 40), to: [Endpoint(host: "127.0.0.1", port: listener.port)], loop: loop, security: .ephemeral(), sink: collector.sink)
      let outbound = try await collector.next { if case .connected(let c) = $0 { c } else { nil } }
      let inbound = try await collector.next { if case .accepted(let c) = $0 { c } else { nil } }
      let threadsDuring = threadCount(named: "nearby-io")
      let fdsDuring = openFileDescriptors()
      guard threadsDuring == threadsBefore + 1, fdsDuring >= fdsBefore + 5 else {
        verdict(
          "set-up: descriptors \(fdsBefore) -> \(fdsDuring), I/O threads \(threadsBefore) -> \(threadsDuring): \(threadsOfThisProcess().map(\.name))")
      }
      outbound.close(.now)
      inbound.close(.now)
      listener.close()
      await loop.shutdown()
      let fdsAfter = openFileDescriptors()
      let threadsAfter = threadCount(named: "nearby-io")
      if fdsAfter != fdsBefore || threadsAfter != threadsBefore {
        verdict("descriptors \(fdsBefore) -> \(fdsAfter), I/O threads \(threadsBefore) -> \(threadsAfter)")
      }
      verdict("ok")
    }
    let said = result.map { String(decoding: $0.standardErrorContent, as: UTF8.self) } ?? ""
    let verdicts = said.split(separator: "\n").filter { $0.hasPrefix("verdict: ") }
    #expect(verdicts == ["verdict: ok"], "child: \(said)")
  }

  /// Adaptive busy polling on a real loop: events that come soon after it starts waiting (a
  /// job every millisecond) make it poll, and its thread is seen running between them and
  /// after them, until the window ends; a loop without polling sleeps; and once its events
  /// come later than the window, a polling loop sleeps at once too.
  @Test func busyPollingKeepsTheThreadRunningWhileEventsComeSoonAndThenItSleeps() async throws {
    let name = "nb-poll-test"
    // A window of a second: a job "every millisecond" that a loaded machine delays to tens of
    // milliseconds still comes soon enough to make the loop poll.
    let loop = try EventLoop(name: name, busyPoll: .seconds(1))
    let quiet = try EventLoop(name: "nb-nopoll-test")
    // From a thread of its own, which starts the samplers too: on a loaded thread pool, a
    // task's 1 ms sleeps once lasted long enough that the loop saw no activity worth polling
    // for, and a task resumed after the loop's window once sampled only its sleep.
    let (polling, notPolling, after) = await withCheckedContinuation {
      (continuation: CheckedContinuation<(ThreadStateSampler, ThreadStateSampler, ThreadStateSampler), Never>) in
      Thread.detachNewThread {
        for _ in 0..<20 {
          loop.execute {}
          quiet.execute {}
          usleep(1000)
        }
        let started = ContinuousClock.now
        continuation.resume(
          returning: (
            ThreadStateSampler(named: name, after: started, from: .zero, until: .milliseconds(600)),
            ThreadStateSampler(named: "nb-nopoll-test", after: started, from: .zero, until: .milliseconds(600)),
            ThreadStateSampler(named: name, after: started, from: .milliseconds(1500), until: .milliseconds(1600), every: .milliseconds(20))
          ))
      }
    }
    let during = try await polling.result()
    let quietStates = try await notPolling.result()
    let afterStates = try await after.result()
    #expect(during.contains("R"), "polling after activity: \(during)")
    #expect(!quietStates.isEmpty && !quietStates.contains("R"), "no polling without a window: \(quietStates)")
    #expect(!afterStates.isEmpty && afterStates.allSatisfy { $0 == "S" }, "after the window: \(afterStates)")

    // Events after long waits (longer than a 20 ms window): the loop stops polling.
    let short = try EventLoop(name: "nb-short-poll", busyPoll: .milliseconds(20))
    for _ in 0..<20 {
      short.execute {}
      try await Task.sleep(for: .milliseconds(1))
    }
    for _ in 0..<4 {
      short.execute {}
      try await Task.sleep(for: .milliseconds(100))
    }
    // Sampled between 2 and 18 ms after the last event; on a loaded machine the sampling
    // thread may start too late to take a sample: then once more, 100 ms after.
    var sleeping: [Character] = []
    for attempt in 0..<5 where sleeping.isEmpty {
      if attempt > 0 { try await Task.sleep(for: .milliseconds(100)) }
      let last = ContinuousClock.now
      short.execute {}
      sleeping = try await ThreadStateSampler(
        named: "nb-short-poll", after: last, from: .milliseconds(2), until: .milliseconds(18), every: .milliseconds(2)
      )
      .result()
    }
    #expect(!sleeping.isEmpty && !sleeping.contains("R"), "events 100 ms apart, a 20 ms window: \(sleeping)")
    await loop.shutdown()
    await quiet.shutdown()
    await short.shutdown()
  }

  /// A loop made on a thread that may run on one CPU only (as under `taskset -c 0`) never
  /// polls, whatever it was asked: its thread inherits that CPU, where polling only keeps
  /// the peer it waits for from running. Made on a thread that may use several, it polls as
  /// asked; and its thread keeps the CPUs it was made with.
  @Test(.enabled(if: sysconf(Int32(_SC_NPROCESSORS_ONLN)) > 1, "needs two CPUs"))
  func aLoopMadeOnOneCPUNeverPolls() async throws {
    let (free, pinned) = await withCheckedContinuation { (continuation: CheckedContinuation<(EventLoop?, EventLoop?), Never>) in
      // A thread of its own: a thread of Swift's pool must not stay pinned.
      Thread.detachNewThread {
        let free = try? EventLoop(name: "nb-poll-free", busyPoll: .microseconds(200))
        let pinned = nearby_pin_thread(1) == 0 ? try? EventLoop(name: "nb-poll-pinned", busyPoll: .microseconds(200)) : nil
        continuation.resume(returning: (free, pinned))
      }
    }
    let freeLoop = try #require(free)
    let pinnedLoop = try #require(pinned, "could not pin a thread to CPU 1")
    #expect(freeLoop.busyPollWindow == .microseconds(200))
    #expect(pinnedLoop.busyPollWindow == .zero)
    let cpus = Mutex<[Int32]>([])
    for _ in 0..<5 {
      await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
        pinnedLoop.execute {
          cpus.withLock { $0.append(nearby_allowed_cpus()) }
          done.resume()
        }
      }
    }
    #expect(cpus.withLock { $0 } == [1, 1, 1, 1, 1])
    await freeLoop.shutdown()
    await pinnedLoop.shutdown()
  }

}
