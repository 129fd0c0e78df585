import Foundation
import Nearby
import NearbyTestSupport
import Testing

/// A session that moves to a new connection without this side noticing the old one was
/// lost: the peer noticed first and resumed (PROTOCOL.md 6.5). Messages in flight are in the
/// resend window; this is about what is not — file-transfer frames, which the transfers send
/// again themselves when told the session moved.
@Suite("Sessions resumed by the peer before we noticed")
struct SilentResumeTests {
  @Test func anOfferSentIntoAPartitionReachesThePeerThatResumedTheSession() async throws {
    // alice notices a silence within 0.7 s and reconnects; bob would wait a minute, so for
    // bob the session simply moves to alice's new connection.
    let alice = try await RunningSession.start("alice") { ReconnectSessionTests.fast(&$0) }
    let bob = try await RunningSession.start("bob") {
      ReconnectSessionTests.fast(&$0)
      $0.timeouts.deadPeer = .seconds(60)
    }
    let link = try FaultyLink(forwardingTo: bob.port)
    defer { link.stop() }
    await alice.session.invite(endpoints: [Endpoint(host: "127.0.0.1", port: link.port)])
    _ = try await alice.expect("connected") { if case .connected = $0 { true } else { nil } }
    _ = try await bob.expect("connected") { if case .connected = $0 { true } else { nil } }

    let source = FileFixtures.folder()
    FileFixtures.write(source + "/note.bin", size: 20_000, seed: 7)
    link.set(.partition)
    // Bob's OFFER goes onto the connection the link now drops.
    let transfer = try await bob.session.sendFiles(at: [source + "/note.bin"], to: alice.peer.id)
    let bobPeer = bob.peer
    _ = try await alice.expect("reconnecting", within: .seconds(5)) { if case .reconnecting(bobPeer, _) = $0 { true } else { nil } }
    // Alice closed the old connection: the link must have held that end back before it
    // heals, or it passes it on and bob sees the loss too (a loaded CI run failed so: the
    // link's thread had not read alice's end yet when the test healed it).
    let deadline = ContinuousClock.now + .seconds(10)
    while link.endsHeldBack < 1, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
    #expect(link.endsHeldBack >= 1, "the link saw alice's end of the old connection")
    link.set(.pass)
    _ = try await alice.expect("reconnected", within: .seconds(10)) { if case .reconnected(bobPeer) = $0 { true } else { nil } }

    let offer = try await alice.expectOffer(within: .seconds(10))
    #expect(offer.id == transfer.id)
    let downloads = FileFixtures.folder()
    try await offer.accept(into: downloads)
    #expect(await transfer.result() == .completed)
    #expect(FileFixtures.blake2b(downloads + "/note.bin") == FileFixtures.blake2b(source + "/note.bin"))
    // The case under test: bob never saw the session suspended.
    let bobSaw = bob.events.all.filter {
      switch $0 {
      case .reconnecting, .reconnected, .disconnected: true
      default: false
      }
    }
    #expect(bobSaw.isEmpty, "bob noticed the loss himself: \(bobSaw)")
    try await alice.stop()
    try await bob.stop()
  }
}
