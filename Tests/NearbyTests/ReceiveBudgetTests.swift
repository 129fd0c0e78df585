import Foundation
import Nearby
import NearbyCore
import NearbyCrypto
import NearbyLab
import NearbyTestSupport
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// Frames are buffered until their last byte arrives: peers that start large frames and
/// finish none are held to one memory budget for all connections, and the ones holding the
/// most are closed with ERROR `resourceExhausted`.
@Suite("The receive memory budget")
struct ReceiveBudgetTests {
  /// Waits until the session's budget holds at least `bytes`.
  static func waitUntilHeld(_ session: NearbySession, atLeast bytes: Int) async throws {
    let deadline = ContinuousClock.now + .seconds(10)
    while await session.receiveBudgetFigures.held < bytes {
      guard ContinuousClock.now < deadline else {
        throw WaitError(description: "the budget never held \(bytes) bytes: \(await session.receiveBudgetFigures)")
      }
      try await Task.sleep(for: .milliseconds(5))
    }
  }

  @Test func theLargestPartialSenderIsClosedAndTheOthersKeepGoing() async throws {
    let budget = 2_228_224  // the smallest allowed: one largest frame and two records
    var timeouts = ConnectionTimeouts()
    timeouts.deadPeer = .seconds(30)
    let alice = try await RunningSession.start("alice") {
      $0.maximumPartialFrameBytes = budget
      $0.timeouts = timeouts
    }
    let bob = try await RunningSession.start("bob")
    try await connect(bob, alice)
    // Each connects just before it joins: connected at once, the later ones waited for the
    // first's join and a loaded full run saw their handshakes time out (5 s) meanwhile.
    let big = try SecureTestPeer(port: alice.port)
    try await big.joinSession(name: "big")
    let middle = try SecureTestPeer(port: alice.port)
    try await middle.joinSession(name: "middle")
    let small = try SecureTestPeer(port: alice.port)
    try await small.joinSession(name: "small")

    // A real message from `middle`, sent all but its last 100 bytes.
    var message: [UInt8] = []
    let body = [UInt8](repeating: 0x6D, count: 800 << 10)
    FrameEncoder.encodeMessage(Frame.Message(id: 9, sender: middle.peerID, timestamp: 0, recipients: [], body: body), into: &message)
    big.sendPartialFrame(length: 1_048_700, count: 900 << 10)
    try await Self.waitUntilHeld(alice.session, atLeast: (900 << 10) - 8)
    middle.sendSealed(Array(message.dropLast(100)))
    try await Self.waitUntilHeld(alice.session, atLeast: (900 << 10) + message.count - 100 - 8)
    // This pushes the total over the budget: the largest holder goes.
    small.sendPartialFrame(length: 1_048_700, count: 700 << 10)

    let closed = await big.readInBackground()
    #expect(closed.closed)
    #expect(SecureTestPeer.errorCodes(closed.frames) == [.resourceExhausted], "\(closed.frames)")
    let disconnected = try await alice.expect("big disconnected") {
      if case .disconnected(let peer, let reason) = $0, peer.id == big.peerID { reason.description } else { nil }
    }
    #expect(disconnected.contains("resourceExhausted"))
    #expect(disconnected.contains("the receive memory budget is exhausted"))
    let figures = await alice.session.receiveBudgetFigures
    #expect(figures.closed == 1)
    #expect(figures.held <= budget)
    #expect(figures.peak <= budget + (1 << 20) + (128 << 10), "a turn reads at most 1 MiB (and a record) before it is counted")

    // The others were not closed: the middle one's message completes and arrives.
    middle.sendSealed(Array(message.suffix(100)))
    let arrived = try await alice.expect("middle's message") { if case .message(let m) = $0, m.from.id == middle.peerID { m } else { nil } }
    #expect(arrived.body == body)
    // And an honest session did not notice.
    let id = try await bob.session.send(Array("still here".utf8), to: .peers([alice.peer.id]))
    _ = try await bob.expect("delivered") { if case .delivered(id, _) = $0 { true } else { nil } }
    _ = small
    try await bob.stop()
    try await alice.stop()
  }

  /// The figure: 300 sessions each holding a partial 2 MiB frame. The session runs
  /// in a process of its own, measured alone.
  @Test func threeHundredPartialFramesOfTwoMiBStayWithinTheBudgetPlus32MB() async throws {
    let budget = 64 << 20
    let target = try await TargetProcess(settings: "budget=\(budget),deadPeer=60")
    var attackers: [SecureTestPeer] = []
    for index in 0..<300 {
      let attacker = try SecureTestPeer(port: target.port)
      try await attacker.joinSession(name: "partial\(index)")
      attackers.append(attacker)
    }
    try await Task.sleep(for: .milliseconds(300))
    let before = target.residentBytes
    let sampler = RSSSampler(pid: target.child.pid)
    // Each attacker reads what it is told from now until its connection closes (the last
    // when the target stops), so no answer is lost to a reset.
    let answers = attackers.map { attacker in
      var timeout = timeval(tv_sec: 60, tv_usec: 0)
      setsockopt(attacker.fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
      return Task { await attacker.readInBackground() }
    }
    // Every attacker sends all but the last KiB of a frame of the largest size, one after
    // the other (on a thread: the writes block).
    let all = attackers
    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
      Thread.detachNewThread {
        for attacker in all {
          attacker.sendPartialFrame(length: ProtocolLimits.maximumFrameLength, count: ProtocolLimits.maximumFrameLength - 1024)
        }
        continuation.resume()
      }
    }
    // Until the target has read everything: as many closed as can be, the rest held.
    let figures = await target.waitForBudget { $0.closed >= 300 - budget / ProtocolLimits.maximumFrameLength - 2 && $0.held > budget - (4 << 20) }
    try await Task.sleep(for: .milliseconds(200))
    let peak = await sampler.stop()
    #expect(figures.peak <= budget + (1 << 20) + (128 << 10), "a turn reads at most 1 MiB (and a record) before it is counted")
    let growth = peak - before
    print(
      "300 partial 2 MiB frames: resident memory \(before >> 20) MiB -> peak \(peak >> 20) MiB (+\(growth >> 20) MiB), budget \(budget >> 20) MiB; target's figures \(figures)"
    )
    #expect(
      growth < budget + (32 << 20), "resident memory grew by \(growth >> 20) MiB (from \(before >> 20) MiB) with a budget of \(budget >> 20) MiB")
    await target.stop()
    // Most were closed with resourceExhausted; about budget / 2 MiB of them still held theirs.
    var exhausted = 0
    for answer in answers where SecureTestPeer.errorCodes(await answer.value.frames).contains(.resourceExhausted) { exhausted += 1 }
    #expect(exhausted >= 300 - budget / ProtocolLimits.maximumFrameLength - 2, "only \(exhausted) were closed")
    #expect(exhausted < 300, "all were closed: the budget holds more than that")
  }
}
