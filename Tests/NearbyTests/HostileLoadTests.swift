import Foundation
import Nearby
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

/// One host floods a session with connections, or one peer floods it with frames: the
/// others still get in, and keep their sessions.
@Suite("Floods of connections and of frames")
struct HostileLoadTests {
  /// Opens `count` connections from `source` (a loopback address of its own: another host)
  /// and keeps them, on a thread of its own. Each sends nothing, as a slow handshake would.
  final class ConnectionFlood: @unchecked Sendable {
    private let sockets = Mutex<[Int32]>([])
    let opened = Atomic<Int>(0)
    private let done = Mutex<CheckedContinuation<Void, Never>?>(nil)
    private let finished = Atomic<Bool>(false)

    init(count: Int, port: UInt16, source: String) {
      Thread.detachNewThread { [self] in
        for _ in 0..<count {
          guard let fd = try? LoopbackSocket.connected(to: port, source: source) else { continue }
          sockets.withLock { $0.append(fd) }
          opened.add(1, ordering: .relaxed)
        }
        finished.store(true, ordering: .releasing)
        done.withLock { $0.take() }?.resume()
      }
    }

    func wait() async {
      await withCheckedContinuation { continuation in
        let now = done.withLock { stored -> Bool in
          if finished.load(ordering: .acquiring) { return true }
          stored = continuation
          return false
        }
        if now { continuation.resume() }
      }
    }

    /// The frames the server sent on the last connection (it is read until closed).
    func lastAnswer() -> [Frame] {
      guard let fd = sockets.withLock({ $0.last }) else { return [] }
      var timeout = timeval(tv_sec: 2, tv_usec: 0)
      setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
      var bytes = [UInt8](repeating: 0, count: 4096)
      let count = bytes.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
      let decoder = FrameDecoder()
      decoder.append(bytes.prefix(max(0, count)))
      return (try? decoder.next()).flatMap { $0 }.map { [$0] } ?? []
    }

    func close() { sockets.withLock { for fd in $0 { Glibc.close(fd) } } }
  }

  /// Bob gets in before any of the flood's connections could have run out its handshake
  /// time: they did not take the places he needed. (How fast exactly is a benchmark's
  /// question: this took 2.15 s once in a full parallel test run, where 2 s was the bound.)
  @Test func anHonestPeerGetsInDuringAFloodOf2000ConnectionsFromOneHost() async throws {
    let alice = try await RunningSession.start("alice")
    let bob = try await RunningSession.start("bob")
    let carol = try await RunningSession.start("carol")
    try await connect(carol, alice)

    let flood = ConnectionFlood(count: 2000, port: alice.port, source: "127.0.0.2")
    while flood.opened.load(ordering: .relaxed) < 500 { try await Task.sleep(for: .milliseconds(5)) }
    // The flood goes on while bob (another host: 127.0.0.1) invites.
    let started = ContinuousClock.now
    await bob.session.invite(endpoints: [alice.endpoint])
    let connected = try await bob.expect("connected or an error", within: .seconds(10)) { event -> String? in
      switch event {
      case .connected: "connected"
      case .error(let error): "\(error)"
      default: nil
      }
    }
    #expect(connected == "connected")
    let took = ContinuousClock.now - started
    #expect(took < alice.session.configuration.timeouts.handshake, "bob connected after \(took)")
    await flood.wait()
    #expect(flood.opened.load(ordering: .relaxed) == 2000)
    // The last flood connections were refused at once, before any handshake.
    let answer = flood.lastAnswer()
    #expect(answer.count == 1)
    if case .error(let code, let message)? = answer.first {
      #expect(code == .busy)
      #expect(message.contains("from 127.0.0.2 are still being set up"))
    }
    // The session alice already had is unaffected.
    let id = try await carol.session.send(Array("during the flood".utf8), to: .all)
    _ = try await carol.expect("delivered") { if case .delivered(id, _) = $0 { true } else { nil } }
    // And alice said once that she refuses that host, not 2000 times.
    let notices = alice.events.all.filter {
      if case .status(.connectionRejected(_, let reason)) = $0 { reason.contains("refusing connections from 127.0.0.2") } else { false }
    }
    #expect(notices.count == 1)
    flood.close()
    try await bob.stop()
    try await carol.stop()
    try await alice.stop()
  }

  /// Invitations waiting for an answer from two hosts (127.0.0.2 and 127.0.0.3, 2 each)
  /// fill alice's 4 slots; bob's, from 127.0.0.1, still reaches her: the oldest of a host with
  /// the most gives way (withdrawn, and declined `busy` on its connection). Real sockets: the
  /// session tells the state machine which host each connection came from.
  @Test(.timeLimit(.minutes(1))) func anInvitationFromAnotherHostGetsASlotTheFloodHeld() async throws {
    // The held peers answer no PING: a long dead-peer timeout keeps them (a real flooder
    // answers; under the parallel run's load, 4 s passed and alice dropped them).
    let alice = try await RunningSession.start("alice", policy: .ask) {
      $0.maximumPendingInvitations = 4
      $0.timeouts.deadPeer = .seconds(120)
    }
    var held: [SecureTestPeer] = []
    for host in ["127.0.0.2", "127.0.0.2", "127.0.0.3", "127.0.0.3"] {
      let peer = try SecureTestPeer(port: alice.port, source: host)
      try await peer.handshakeInBackground(payload: SecureTestPeer.helloPayload(peer.hello(name: "held-\(held.count)")))
      peer.write(.invite(Frame.Invite(invitationID: 1, timeoutMilliseconds: 600_000, context: [])))
      let id = peer.peerID
      _ = try await alice.expect("invitation \(held.count)") { if case .invitation(let i) = $0, i.peer.id == id { true } else { nil } }
      held.append(peer)
    }
    let bob = try await RunningSession.start("bob")
    await bob.session.invite(endpoints: [alice.endpoint])
    let invitation = try await alice.expect("bob's invitation") { if case .invitation(let i) = $0, i.peer.id == bob.peer.id { i } else { nil } }
    let first = held[0].peerID
    _ = try await alice.expect("the oldest of 127.0.0.2 withdrawn") {
      if case .invitationWithdrawn(let p, _) = $0, p.id == first { true } else { nil }
    }
    let answer = await held[0].readInBackground { frames in frames.contains { if case .decline = $0 { true } else { false } } }
    #expect(answer.frames.contains(.decline(invitationID: 1, reason: .busy)), "\(answer.frames)")
    await alice.session.accept(invitation.peer.id)
    _ = try await bob.expect("connected") { if case .connected = $0 { true } else { nil } }
    let waiting = Set(await alice.session.pendingInvitations.map(\.peer.id))
    #expect(waiting == Set(held.dropFirst().map(\.peerID)), "the three others still wait")
    try await bob.stop()
    try await alice.stop()
  }

  /// Connections from many hosts would take every descriptor the process may open: the
  /// listener keeps some back for the rest of the process (libdispatch's thread-pool monitor
  /// stopped the process with SIGILL when it could not open a file under /proc), refuses the
  /// rest, waits instead of spinning on a socket it cannot accept from, and new peers get in
  /// once some close. (In a process of its own, limited to 64 descriptors.)
  @Test func runningOutOfDescriptorsDoesNotSpinTheLoop() async throws {
    let target = try await TargetProcess(settings: "files=64,handshake=30")
    // 8 hosts of 16 connections each: more than 64 descriptors, every one within the
    // per-source limit.
    var floods: [ConnectionFlood] = []
    for host in 2...9 { floods.append(ConnectionFlood(count: 16, port: target.port, source: "127.0.0.\(host)")) }
    try await Task.sleep(for: .seconds(1))
    let before = target.cpuTime
    try await Task.sleep(for: .seconds(2))
    let used = target.cpuTime - before
    #expect(used < .milliseconds(600), "the target used \(used) of CPU in 2 s while out of descriptors")
    // The reserve is left free (a descriptor or two may come and go meanwhile).
    let open = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(target.child.pid)/fd").count) ?? 0
    #expect(open > 0 && open <= 64 - Int(TCPListener.descriptorReserve) + 2, "the target holds \(open) of its 64 descriptors")
    for flood in floods { flood.close() }
    // Once they are gone, a peer gets in.
    let deadline = ContinuousClock.now + .seconds(10)
    var joined = false
    var failures: [String] = []
    while !joined, ContinuousClock.now < deadline {
      do {
        let peer = try SecureTestPeer(port: target.port)
        try await peer.joinSession(name: "late")
        joined = true
      } catch {
        failures.append("\(error)")
        try await Task.sleep(for: .milliseconds(200))
      }
    }
    #expect(joined, "no peer got in within 10 s: \(failures.suffix(3))")
    await target.stop()
  }

  /// A peer sends PINGs as fast as the connection takes them; the I/O thread gives it its
  /// share of each iteration and no more, so an honest peer's heartbeat (every 100 ms,
  /// timed out after 600 ms here) keeps its session alive.
  @Test func aFloodOfSmallFramesDoesNotStarveAnotherPeersHeartbeat() async throws {
    var timeouts = ConnectionTimeouts()
    timeouts.pingInterval = .milliseconds(100)
    timeouts.deadPeer = .milliseconds(600)
    let alice = try await RunningSession.start("alice") { $0.timeouts = timeouts }
    let bob = try await RunningSession.start("bob") { $0.timeouts = timeouts }
    try await connect(bob, alice)
    var pings: [UInt8] = []
    for nonce in 0..<5000 { FrameEncoder.encode(.ping(nonce: UInt64(nonce)), into: &pings) }
    // Joined last: a peer silent for 600 ms is timed out here. It joins and floods from one
    // thread: with a hop through the thread pool between the two (a detached task that
    // started the thread), full parallel runs saw its first PINGs come after the timeout.
    let flooder = try SecureTestPeer(port: alice.port)
    let flood = FrameFlood()
    let flooding = Task.detached { [pings] () -> (any Error)? in
      await withCheckedContinuation { (continuation: CheckedContinuation<(any Error)?, Never>) in
        Thread.detachNewThread {
          do {
            try flooder.joinSessionBlocking(name: "flooder")
          } catch {
            flood.stop.store(true, ordering: .relaxed)
            continuation.resume(returning: error)
            return
          }
          flood.joined.store(true, ordering: .relaxed)
          while !flood.stop.load(ordering: .relaxed), flooder.sendSealed(pings) { flood.sent.add(5000, ordering: .relaxed) }
          continuation.resume(returning: nil)
        }
      }
    }
    while !flood.joined.load(ordering: .relaxed), !flood.stop.load(ordering: .relaxed) { try await Task.sleep(for: .milliseconds(5)) }
    if flood.stop.load(ordering: .relaxed), let error = await flooding.value {
      Issue.record("the flooder could not join: \(error)")
      try await bob.stop()
      try await alice.stop()
      return
    }
    // Round trips between bob and alice while the flood runs.
    var slowest = Duration.zero
    // For 3 s, and on until the flood has sent 100 000 PINGs (a loaded machine floods slowly).
    let until = ContinuousClock.now + .seconds(3)
    let giveUp = ContinuousClock.now + .seconds(30)
    while ContinuousClock.now < until || (flood.sent.load(ordering: .relaxed) <= 100_000 && ContinuousClock.now < giveUp) {
      let started = ContinuousClock.now
      let id = try await bob.session.send(Array("ping".utf8), to: .peers([alice.peer.id]))
      let outcome = try await bob.expect("delivered", within: .seconds(5)) { event -> String? in
        switch event {
        case .delivered(id, _): "delivered"
        case .disconnected(_, let reason): "bob lost alice: \(reason)"
        default: nil
        }
      }
      try #require(outcome == "delivered")
      slowest = max(slowest, ContinuousClock.now - started)
      try await Task.sleep(for: .milliseconds(50))
    }
    flood.stop.store(true, ordering: .relaxed)
    flooder.shutdownWrite()
    _ = await flooding.value
    print("flood of PINGs: \(flood.sent.load(ordering: .relaxed)) sent; slowest message round trip of bob meanwhile \(slowest)")
    let closings = alice.events.all.filter { if case .disconnected = $0 { true } else { false } }
    #expect(flood.sent.load(ordering: .relaxed) > 100_000, "the flood was not a flood; alice's disconnections: \(closings)")
    #expect(!bob.events.all.contains { if case .disconnected = $0 { true } else { false } })
    #expect(await alice.session.connectedPeers.contains(bob.peer))
    try await bob.stop()
    try await alice.stop()
  }

  final class FrameFlood: Sendable {
    let joined = Atomic<Bool>(false)
    let stop = Atomic<Bool>(false)
    let sent = Atomic<Int>(0)
  }
}
