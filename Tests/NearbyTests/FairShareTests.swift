import Nearby
import NearbyLab
import NearbyTestSupport
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// A peer that floods a session does not push another peer's messages far back in the
/// session's one event sequence (NearbySession+FairShare.swift), and what is held back for
/// fairness keeps its order and is never overtaken by a later event about its peer.
@Suite("Fair shares of the event sequence")
struct FairShareTests {
  static let floodCount = 1000

  /// alice, whose application takes nothing until the test reads her events; bob floods her
  /// with `count` numbered 8-byte messages, then carol sends one. Past
  /// `maximumUntakenMessages`, alice stops reading bob: carol's then comes before the rest.
  /// `readers`: how many of alice's event iterators exist before the flood.
  func flooded(count: Int = floodCount, readers: Int = 1) async throws -> Flood {
    var configuration = SessionConfiguration(identity: .ephemeral(), name: try DisplayName("alice"))
    configuration.advertise = false
    configuration.browse = false
    configuration.listenHost = "127.0.0.1"
    configuration.acceptPolicy = .all
    let alice = try NearbySession(configuration: configuration)
    let events = (0..<readers).map { _ in alice.events.makeAsyncIterator() }
    let run = Task { try await alice.run() }
    let port = try #require(await alice.waitUntilListening())
    var senders: [RunningSession] = []
    for name in ["bob", "carol"] {
      let sender = try await RunningSession.start(name)
      await sender.session.invite(endpoints: [Endpoint(host: "127.0.0.1", port: port)])
      _ = try await sender.expect("connected") { if case .connected = $0 { true } else { nil } }
      senders.append(sender)
    }
    let (bob, carol) = (senders[0], senders[1])
    let aliceID = alice.configuration.peer.id
    for index in 0..<count {
      _ = try await bob.session.send(Array(Self.floodText(index).utf8), to: .peers([aliceID]))
    }
    let held = min(count, configuration.maximumUntakenMessages + 1)
    try await untaken(alice, reaches: held * 8)
    _ = try await carol.session.send(Array("hello".utf8), to: .peers([aliceID]))
    // Bob's are 8 bytes each: carol's 5 bytes are in when the total is 5 more than a multiple of 8.
    try await untaken(alice, reaches: held * 8 + 5, where: { $0 % 8 == 5 })
    return Flood(alice: alice, events: events, run: run, bob: bob, carol: carol)
  }

  /// What ``flooded()`` set up. Its event iterator is handed out once (``takeEvents()``), so
  /// that a test can end alice's only subscription by letting it go.
  final class Flood: @unchecked Sendable {
    let alice: NearbySession
    private var events: [SessionEvents.Iterator]
    let run: Task<Void, any Error>
    let bob: RunningSession
    let carol: RunningSession

    init(alice: NearbySession, events: [SessionEvents.Iterator], run: Task<Void, any Error>, bob: RunningSession, carol: RunningSession) {
      self.alice = alice
      self.events = events
      self.run = run
      self.bob = bob
      self.carol = carol
    }

    /// The next of alice's event iterators made before the flood (each is handed out once).
    func takeEvents() -> SessionEvents.Iterator { events.removeFirst() }

    func stop() async throws {
      try await bob.stop()
      try await carol.stop()
      await alice.shutdown()
      try await run.value
    }
  }

  static func floodText(_ index: Int) -> String {
    let digits = String(index)
    return "b" + String(repeating: "0", count: 7 - digits.count) + digits
  }

  /// Reads alice's events until one is `isIt`, and expects it after all of bob's messages,
  /// each once, in order.
  static func expectAfterBobsMessages(
    _ what: String, in events: inout SessionEvents.Iterator, bob: PeerID, _ isIt: (SessionEvent) -> Bool
  ) async {
    var bobs: [String] = []
    var after: Int?
    while after == nil, let event = await events.next() {
      if case .message(let message) = event, message.from.id == bob {
        bobs.append(String(decoding: message.body, as: UTF8.self))
      } else if isIt(event) {
        after = bobs.count
      }
    }
    #expect(after == floodCount, "\(what) came after \(after.map(String.init) ?? "none") of bob's messages")
    let ordered = inOrder(bobs)
    #expect(ordered, "bob's, each once, in order: \(disorder(bobs))")
  }

  /// The texts of the next `count` messages alice's application reads (`pausing`: 5 ms every
  /// 100 of them, a slow reader).
  static func texts(_ count: Int, from events: inout SessionEvents.Iterator, pausing: Bool = false) async -> [String] {
    var texts: [String] = []
    while texts.count < count, let event = await events.next() {
      guard case .message(let message) = event else { continue }
      texts.append(String(decoding: message.body, as: UTF8.self))
      if pausing, texts.count % 100 == 0 { try? await Task.sleep(for: .milliseconds(5)) }
    }
    return texts
  }

  /// Expects carol's first message within a fair share of the start of `texts`, and bob's
  /// `count` messages in the rest, each once, in order.
  static func expectFairAndInOrder(_ texts: [String], count: Int = floodCount) throws {
    let ahead = try #require(texts.firstIndex(of: "hello"), "carol's message never came: \(texts.suffix(3))")
    #expect(ahead <= NearbySession.fairShare, "\(ahead) of bob's messages came before carol's")
    let bobs = texts.filter { $0 != "hello" }
    let ordered = inOrder(bobs, count: count)
    #expect(ordered, "bob's, each once, in order: \(disorder(bobs, count: count))")
  }

  /// Whether `texts` are bob's `count` messages, each once, in order.
  static func inOrder(_ texts: [String], count: Int = floodCount) -> Bool { texts == (0..<count).map(floodText) }

  /// Where `texts` first differ from bob's `count` messages in order (short, for a failure).
  static func disorder(_ texts: [String], count: Int = floodCount) -> String {
    let expected = (0..<count).map(floodText)
    guard let index = texts.indices.first(where: { $0 < expected.count && texts[$0] != expected[$0] }) else {
      return "\(texts.count) of \(count)"
    }
    return "\(texts.count) of \(count); at \(index): \(texts[index]), not \(expected[index])"
  }

  /// Waits until alice holds at least `bytes` of messages her application has not taken, and
  /// the total satisfies `condition`.
  func untaken(_ alice: NearbySession, reaches bytes: Int, where condition: (Int) -> Bool = { _ in true }) async throws {
    let deadline = ContinuousClock.now + .seconds(20)
    while case let now = await alice.untakenFigures.bytes, now < bytes || !condition(now) {
      guard ContinuousClock.now < deadline else {
        Issue.record("alice holds \(await alice.untakenFigures.bytes) bytes untaken, not \(bytes)")
        throw CancellationError()
      }
      try await Task.sleep(for: .milliseconds(20))
    }
  }

  @Test func aFloodingPeerPutsAtMostAFairShareAheadOfAnotherPeersMessage() async throws {
    let flood = try await flooded()
    let (bob, carol) = (flood.bob, flood.carol)
    var events = flood.takeEvents()
    // Without the fair share, all 1000 of bob's came first.
    try Self.expectFairAndInOrder(await Self.texts(Self.floodCount + 1, from: &events))
    for _ in 0..<Self.floodCount { _ = try await bob.expect("delivered") { if case .delivered = $0 { true } else { nil } } }
    _ = try await carol.expect("delivered") { if case .delivered = $0 { true } else { nil } }
    try await flood.stop()
  }

  /// bob leaves while most of his messages are held back: alice's application still gets
  /// every one of them, and only then hears that he left.
  @Test func aPeerThatLeavesIsReportedAfterItsMessagesHeldBack() async throws {
    let flood = try await flooded()
    let (alice, bob) = (flood.alice, flood.bob)
    var events = flood.takeEvents()
    try await bob.stop()
    // Until alice has seen bob's goodbye (his connection is gone).
    let deadline = ContinuousClock.now + .seconds(10)
    while await alice.connectedPeers.contains(where: { $0.id == bob.peer.id }), ContinuousClock.now < deadline {
      try await Task.sleep(for: .milliseconds(20))
    }
    await Self.expectAfterBobsMessages("bob's leaving", in: &events, bob: bob.peer.id) {
      if case .disconnected(let peer, _) = $0 { peer.id == bob.peer.id } else { false }
    }
    try await flood.stop()
  }

  /// bob's receipt for alice's message came after his flood on the wire: alice's application
  /// sees it after all of bob's messages, though most of them were held back.
  @Test func aReceiptDoesNotOvertakeItsPeersMessagesHeldBack() async throws {
    let flood = try await flooded()
    let (alice, bob) = (flood.alice, flood.bob)
    var events = flood.takeEvents()
    let ping = try await alice.send(Array("ping".utf8), to: .peers([bob.peer.id]))
    // Until bob's receipt reached alice (her session has it; her application not yet).
    #expect(await alice.delivery(of: ping)?.delivered == 1)
    await Self.expectAfterBobsMessages("the receipt", in: &events, bob: bob.peer.id) {
      if case .delivered(let id, _) = $0 { id == ping } else { false }
    }
    try await flood.stop()
  }

  /// A connection that sends garbage makes alice report it (an event about nobody): that
  /// does not publish what she holds back of bob's, so carol's next message is still at most
  /// a fair share behind. (Releasing everything on any event let a flooder undo the share.)
  @Test func anEventAboutNobodyDoesNotReleaseWhatIsHeldBack() async throws {
    let flood = try await flooded()
    let (alice, carol) = (flood.alice, flood.carol)
    var events = flood.takeEvents()
    let port = try #require(await alice.waitUntilListening())
    let junk = try SecureTestPeer(port: port)
    junk.writeRaw(Array("GET / HTTP/1.1\r\nHost: x\r\n\r\n".utf8))
    // Until alice closed it (its socket reads the end).
    var byte: UInt8 = 0
    _ = read(junk.fd, &byte, 1)
    _ = try await carol.session.send(Array("again".utf8), to: .peers([alice.configuration.peer.id]))
    try await untaken(alice, reaches: Self.floodCount * 8 + 5 + 5)
    var texts: [String] = []
    var rejected: Int?
    while texts.count < Self.floodCount + 2, let event = await events.next() {
      switch event {
      case .message(let message): texts.append(String(decoding: message.body, as: UTF8.self))
      case .error(.authenticationFailed(nil, _)): rejected = rejected ?? texts.count
      default: break
      }
    }
    #expect(rejected != nil, "alice reported the connection that sent garbage")
    let again = try #require(texts.firstIndex(of: "again"), "carol's second message never came")
    #expect(again <= NearbySession.fairShare + 1, "\(again - 1) of bob's messages came before carol's second")
    let ordered = Self.inOrder(texts.filter { $0 != "hello" && $0 != "again" })
    #expect(ordered, "bob's, each once, in order")
    try await flood.stop()
  }

  /// bob offers a file right after his flood: the offer comes after all of his messages,
  /// though most of them were held back when it arrived.
  @Test func aFileOfferComesAfterItsSendersMessagesHeldBack() async throws {
    let flood = try await flooded()
    let (alice, bob) = (flood.alice, flood.bob)
    var events = flood.takeEvents()
    let folder = FileFixtures.folder("fair-share")
    FileFixtures.write(folder + "/notes.txt", size: 1000)
    _ = try await bob.session.sendFiles(at: [folder + "/notes.txt"], to: alice.configuration.peer.id)
    await Self.expectAfterBobsMessages("the offer", in: &events, bob: bob.peer.id) {
      if case .transfer(.offer(let offer)) = $0 { offer.from.id == bob.peer.id } else { false }
    }
    try await flood.stop()
  }

  /// alice's application stops reading while bob's messages are held back, and reads again
  /// later: nothing stays stuck. What nobody read counts as taken (as a subscriber's unread
  /// events always did), bob hears all of it delivered, and his next message reaches the
  /// new reader.
  @Test func aReaderThatLeavesAndComesBackIsNotStuck() async throws {
    let flood = try await flooded()
    let (alice, bob) = (flood.alice, flood.bob)
    try await Self.readOne(flood.takeEvents())
    for _ in 0..<Self.floodCount { _ = try await bob.expect("delivered") { if case .delivered = $0 { true } else { nil } } }
    var events = alice.events.makeAsyncIterator()
    _ = try await bob.session.send(Array("after".utf8), to: .peers([alice.configuration.peer.id]))
    let watchdog = Task {
      try await Task.sleep(for: .seconds(15))
      await alice.shutdown()
    }
    var after = false
    while !after, let event = await events.next() {
      if case .message(let message) = event, message.body == Array("after".utf8) { after = true }
    }
    watchdog.cancel()
    #expect(after, "bob's message after the reader came back never reached it")
    try await flood.stop()
  }

  /// Takes one event with `iterator`, then lets it go (its subscription ends with it).
  static func readOne(_ iterator: SessionEvents.Iterator) async throws {
    var events = iterator
    _ = await events.next()
  }

  /// bob sends more than alice may hold untaken from him: she stops reading him, carol's
  /// message still comes within a fair share, and once alice reads, every one of bob's comes,
  /// in order, and nothing is left counted or paused.
  @Test func aFloodPastTheUntakenLimitPausesResumesAndLosesNothing() async throws {
    let count = 6000
    let flood = try await flooded(count: count)
    let (alice, bob) = (flood.alice, flood.bob)
    var events = flood.takeEvents()
    #expect(await alice.untakenFigures.pausedConnections == 1, "alice stopped reading bob")
    try Self.expectFairAndInOrder(await Self.texts(count + 1, from: &events), count: count)
    for _ in 0..<count { _ = try await bob.expect("delivered") { if case .delivered = $0 { true } else { nil } } }
    let figures = await alice.untakenFigures
    #expect(figures.bytes == 0 && figures.pausedConnections == 0, "left untaken: \(figures)")
    try await flood.stop()
  }

  /// Two readers of alice's events: a message's claim settles once both took it, so what
  /// is held back goes to the hub at the pace of the slower. Each gets carol's message within
  /// a fair share and all of bob's, each once, in order.
  @Test func twoReadersEachGetEverythingInOrderAtTheSlowerPace() async throws {
    let flood = try await flooded(readers: 2)
    let (alice, bob) = (flood.alice, flood.bob)
    let readers = [flood.takeEvents(), flood.takeEvents()].enumerated().map { index, iterator in
      Task { () -> [String] in
        var events = iterator
        // The second reader is the slow one.
        return await Self.texts(Self.floodCount + 1, from: &events, pausing: index == 1)
      }
    }
    for reader in readers { try Self.expectFairAndInOrder(await reader.value) }
    for _ in 0..<Self.floodCount { _ = try await bob.expect("delivered") { if case .delivered = $0 { true } else { nil } } }
    #expect(await alice.untakenFigures.bytes == 0)
    try await flood.stop()
  }
}
