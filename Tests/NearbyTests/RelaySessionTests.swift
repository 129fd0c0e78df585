import Foundation
import Nearby
import NearbyCore
import NearbyLab
import NearbyRelay
import NearbyTestSupport
import Testing

@Suite("A relay session with a slow peer")
struct RelaySessionTests {
  @Test func aSlowPeerNeverStallsTheOthersAndItsDropsAreReportedToTheSender() async throws {
    let relay = try await RunningSession.start("relay", policy: .all) {
      $0.isRelay = true
      $0.maximumQueuedBytes = 1 << 20
      // The slow peer is a test peer that answers no PING: it must not count as dead before
      // its queue fills (a loaded full run takes seconds for that).
      $0.timeouts.deadPeer = .seconds(60)
    }
    let alice = try await RunningSession.start("alice")
    let bob = try await RunningSession.start("bob")
    try await connect(alice, relay)
    try await connect(bob, relay)

    // A peer that joins and then never reads again.
    let slow = try SecureTestPeer(port: relay.port, receiveBuffer: 4096)
    try await slow.handshakeInBackground(payload: SecureTestPeer.helloPayload(slow.hello(name: "slow")))
    slow.write(.invite(Frame.Invite(invitationID: 1, timeoutMilliseconds: 30_000, context: [])))
    let slowPeer = Peer(id: slow.peerID, name: try DisplayName("slow"))
    _ = try await alice.expect("slow reachable") { if case .reachable(let peer, _) = $0, peer.id == slowPeer.id { true } else { nil } }
    _ = try await alice.expect("bob reachable") { if case .reachable(let peer, _) = $0, peer.id == bob.peer.id { true } else { nil } }
    // Alive (it pings, so the relay does not time it out) but it never reads.
    let keepAlive = Task {
      var nonce: UInt64 = 1
      while !Task.isCancelled {
        slow.write(.ping(nonce: nonce))
        nonce += 1
        try? await Task.sleep(for: .milliseconds(500))
      }
    }
    defer { keepAlive.cancel() }

    // A steady stream (about 16 MB/s): bob keeps up; the slow peer's buffers fill up.
    let body = [UInt8](repeating: 0x61, count: 16_000)
    var sent: [MessageID] = []
    for round in 0..<100 {
      for _ in 0..<5 { sent.append(try await alice.session.send(body)) }
      if round % 2 == 1 { try await Task.sleep(for: .milliseconds(5)) }
    }
    // Bob gets every message, in order.
    for id in sent {
      let message = try await bob.expect("message \(id)") { if case .message(let m) = $0 { m } else { nil } }
      #expect(message.id == id)
    }
    // Alice hears which messages did not reach the slow peer, and why.
    let dropped = try await alice.expect("queueFull report") {
      if case .error(.undelivered(let id, _, let peer, .remote(.queueFull))) = $0, peer == slowPeer.id { id } else { nil }
    }
    #expect(sent.contains(dropped))
    #expect(await relay.session.relayStatistics.queueFullDrops > 0)
    _ = slow
    try await alice.stop()
    try await bob.stop()
    try await relay.stop()
  }

  @Test func allowListFilesAreParsedWithLineNumbersInErrors() throws {
    let directory = Repository.temporaryDirectory()
    let good = directory + "/allow"
    let id = PeerID.random()
    try "# operators\n\(id.hex)  # alice\n\n".write(toFile: good, atomically: true, encoding: .utf8)
    #expect(try RelayAllowList.read(good) == [id])
    let bad = directory + "/bad"
    try "\(id.hex)\nnot-an-id\n".write(toFile: bad, atomically: true, encoding: .utf8)
    #expect(throws: (any Error).self) { try RelayAllowList.read(bad) }
    do {
      _ = try RelayAllowList.read(bad)
    } catch {
      #expect("\(error)".contains("line 2"))
    }
  }
}

typealias RelayAllowList = RelayService
extension RelayService {
  static func read(_ path: String) throws -> Set<PeerID> { try readAllowList(path) }
}
