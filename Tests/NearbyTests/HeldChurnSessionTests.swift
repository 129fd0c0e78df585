import NearbyCore
import NearbyCrypto
import NearbyLab
import NearbyTestSupport
import Testing

@testable import Nearby

/// HeldMessages over real sockets: a relay in the middle (mallory, hand-driven) passes
/// carol's real messages, sealed end to end, to alice, whose application takes nothing. Past
/// a fair share, carol's messages wait in alice's session, and so does every event about
/// carol behind them. Mallory then adds and removes carol from her roster, again and again:
/// the events about carol's reachability that wait behind her messages stay one, not one per
/// change, and the reader still learns carol is reachable before her messages and where she
/// is in the end.
@Suite("Held messages over real sockets")
struct HeldChurnSessionTests {
  static let messages = 200
  /// Removals and additions of carol (two ROSTER frames each): within what a session takes
  /// from a relay at once (256 frames, then 64 a second), or it closes the relay.
  static let changes = 120

  @Test func aRosterChurnBehindHeldMessagesKeepsOneEvent() async throws {
    let aliceKeys = SecureTestPeer.makeIdentity()
    let carolKeys = SecureTestPeer.makeIdentity()
    let relayKeys = SecureTestPeer.makeIdentity()
    // Hand-driven peers answer no PING: a dead-peer timeout of a minute keeps them.
    var configuration = SessionConfiguration(identity: PeerIdentity(keyPair: aliceKeys), name: try DisplayName("alice"))
    configuration.advertise = false
    configuration.browse = false
    configuration.listenHost = "127.0.0.1"
    configuration.acceptPolicy = .all
    configuration.timeouts.deadPeer = .seconds(60)
    let alice = try NearbySession(configuration: configuration)
    var reader = alice.events.makeAsyncIterator()
    let run = Task { try await alice.run() }
    let port = try #require(await alice.waitUntilListening())
    let carol = try await RunningSession.start("carol", identity: PeerIdentity(keyPair: carolKeys)) { $0.timeouts.deadPeer = .seconds(60) }
    let toAlice = try SecureTestPeer(port: port, identity: relayKeys)
    let toCarol = try SecureTestPeer(port: carol.port, identity: relayKeys)
    // A second connection of alice's: a session with one holds nothing back.
    let dave = try SecureTestPeer(port: port)
    try await dave.joinSession(name: "dave")
    try await toAlice.joinSession(name: "mallory", capabilities: .relay)
    try await toCarol.joinSession(name: "mallory", capabilities: .relay)
    let carolEntry = Frame.Roster.Entry(peer: carol.peer, hops: 1, publicKey: carolKeys.publicKey.bytes)
    toAlice.write(.roster(Frame.Roster(kind: .full, entries: [carolEntry])))
    toCarol.write(
      .roster(Frame.Roster(kind: .full, entries: [Frame.Roster.Entry(peer: alice.configuration.peer, hops: 1, publicKey: aliceKeys.publicKey.bytes)]))
    )
    let aliceID = alice.configuration.peer.id
    _ = try await carol.expect("alice reachable through mallory") { if case .reachable(let p, _) = $0, p.id == aliceID { true } else { nil } }

    // Carol's messages, as they reach mallory, passed on to alice, with the churn (ending
    // with carol in the roster) before the last; then a PING, whose PONG says alice handled
    // all of it.
    for index in 0...Self.messages { _ = try await carol.session.send(Array("\(index)".utf8), to: .peer(aliceID)) }
    let sent = await toCarol.readInBackground { frames in frames.count { if case .message = $0 { true } else { false } } > Self.messages }
    let forwarded = sent.frames.filter { if case .message = $0 { true } else { false } }
    try #require(forwarded.count == Self.messages + 1, "carol's messages at the relay: \(forwarded.count)")
    await toAlice.inBackground { mallory in
      mallory.write(Array(forwarded.dropLast()))
      for _ in 0..<Self.changes {
        mallory.write(.roster(Frame.Roster(kind: .remove, entries: [carolEntry])), .roster(Frame.Roster(kind: .add, entries: [carolEntry])))
      }
      mallory.write(forwarded.last!, .ping(nonce: 42))
    }
    let answered = await toAlice.readInBackground { frames in frames.contains { if case .pong(nonce: 42) = $0 { true } else { false } } }
    try #require(
      answered.frames.contains { if case .pong(nonce: 42) = $0 { true } else { false } },
      "no PONG: \(answered.error ?? "-"), closed \(answered.closed), frames \(answered.frames.prefix(5))")

    // The reader: carol reachable before her first message, her messages in order, and
    // only a few events about her reachability between her first and her last (one per
    // change before), carol reachable in the end.
    var reachableBefore = false
    var read: [String] = []
    var changesBetween = 0
    var lastReach: String?
    while read.count <= Self.messages {
      let event = try #require(await reader.next())
      switch event {
      case .reachable(let peer, _) where peer.id == carol.peer.id:
        if read.isEmpty { reachableBefore = true } else { changesBetween += 1 }
        lastReach = "reachable"
      case .unreachable(let peer) where peer.id == carol.peer.id:
        if !read.isEmpty { changesBetween += 1 }
        lastReach = "unreachable"
      case .message(let message):
        read.append(String(decoding: message.body, as: UTF8.self))
      default: break
      }
    }
    #expect(reachableBefore, "carol reachable before her first message")
    #expect(read == (0...Self.messages).map { "\($0)" }, "carol's messages, each once, in order")
    #expect(changesBetween <= 2, "\(changesBetween) events about carol's reachability among her messages, for \(2 * Self.changes) changes")
    #expect(lastReach == "reachable", "carol is in the roster in the end")

    toAlice.finish()
    toCarol.finish()
    dave.finish()
    try await carol.stop()
    run.cancel()
    _ = await run.result
  }
}
