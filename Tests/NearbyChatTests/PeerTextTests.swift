import Nearby
import NearbyChat
import Testing

/// What a peer controls in the chat's output: hidden characters in its text are shown
/// escaped, and a name that looks like another peer's is shown with the peer's id.
@Suite("Peer text and lookalike names in the output")
struct PeerTextTests {
  static func peer(_ name: String, _ low: UInt64) -> Peer {
    Peer(id: PeerID(high: 0xB0B0_0000_0000_0000 | low, low: low), name: try! DisplayName(name))
  }

  static func message(_ text: String, from peer: Peer) -> ChatLine {
    .event(.message(ReceivedMessage(id: 1, from: peer, isPrivate: false, timestamp: 0, body: Array(text.utf8))))
  }

  static func connected(_ peer: Peer) -> ChatLine { .event(.connected(peer, PeerSecurity(verificationCode: "123456", isVerified: false))) }

  @Test(
    "hidden characters are escaped",
    arguments: [
      ("evil\u{202E}txt.exe", "evil\\u{202E}txt.exe"),
      ("\u{2066}isolated\u{2069}", "\\u{2066}isolated\\u{2069}"),
      ("zero\u{200B}width", "zero\\u{200B}width"),
      ("soft\u{AD}hyphen", "soft\\u{AD}hyphen"),
      ("line\u{2028}separator", "line\\u{2028}separator"),
      ("a\u{1B}[2Jb\nc", "a\\x1b[2Jb\\nc"),
      ("tab\there", "tab    here"),
    ])
  func escaped(_ text: String, _ shown: String) {
    #expect(EventFormatter.sanitize(text) == shown)
  }

  @Test("visible text is kept as it is", arguments: ["hello", "grüße 日本語", "👩‍💻 at work", "❤️", "שלום עולם", "🏳️‍🌈"])
  func kept(_ text: String) {
    #expect(EventFormatter.sanitize(text) == text)
  }

  /// `nearby send` and `nearby receive` print why a transfer was cancelled: the peer's own
  /// message, escaped (it was printed raw, escape sequences and all, to the terminal).
  @Test func aCancelledTransfersMessageFromThePeerIsEscaped() {
    let mallory = Self.peer("mallory", 7)
    let id = TransferID.random()
    let text = EventFormatter.cancelledText(id, by: mallory, message: "bye\u{1B}]52;c;aGk=\u{07}\u{1B}[2J")
    #expect(!text.unicodeScalars.contains("\u{1B}") && !text.unicodeScalars.contains("\u{07}"), "\(text)")
    #expect(text == "transfer \(id.shortHex) was cancelled by mallory (\(mallory.id.shortHex)): bye\\x1b]52;c;aGk=\\x07\\x1b[2J")
    #expect(EventFormatter.cancelledText(id, by: nil, message: "") == "transfer \(id.shortHex) was cancelled")
  }

  /// Discovery left instances out: a line for people and one for scripts, from the chat's
  /// formatter as from the plain and JSON outputs.
  @Test func aCrowdedDiscoveryIsOneWarningLine() {
    let event = SessionEvent.status(.discoveryCrowded(limit: 4608))
    #expect(
      PlainOutput(json: false).render(.event(event))
        == "! discovery: more than 4608 services of this type announced on the LAN (a flood?); the newest are left out, and looked for again once there is room"
    )
    #expect(PlainOutput(json: true).render(.event(event)) == #"{"event":"crowded","limit":4608}"#)
  }

  @Test func plainOutputEscapesMessageTextAndNames() {
    let output = PlainOutput(json: false)
    let bob = Self.peer("bob", 1)
    let line = output.render(Self.message("look: \u{202E}gnp.exe", from: bob))
    #expect(line?.hasSuffix("] bob: look: \\u{202E}gnp.exe") == true, "\(line ?? "-")")
  }

  @Test(
    "names that look alike",
    arguments: [
      ("bob", "bоb"),  // Cyrillic о
      ("bob", "Bob"),
      ("BOB", "ВОВ"),  // Cyrillic capitals
      ("alice", "аlice"),  // Cyrillic а
      ("paypal", "раураl"),  // Cyrillic р, а, у
      ("kappa", "κарра"),  // Greek κ, Cyrillic а and р
      ("pope", "ροpe"),  // Greek ρ and ο
      ("Ian", "lan"),
      ("modern", "rnodern"),
      ("bob", "ｂｏｂ"),  // fullwidth
      ("carl", "car1"),
    ])
  func lookalikes(_ first: String, _ second: String) {
    #expect(NameSkeleton.key(first) == NameSkeleton.key(second) || first.lowercased() == second.lowercased())
    var names = KnownPeerNames()
    let a = Self.peer(first, 1)
    let b = Self.peer(second, 2)
    names.note(a)
    #expect(!names.looksAlike(a))
    names.note(b)
    #expect(names.looksAlike(a))
    #expect(names.looksAlike(b))
    #expect(names.label(a) == "\(first) (\(a.id.shortHex))")
    #expect(names.label(b) == "\(second) (\(b.id.shortHex))")
  }

  /// Names shaped like a label: shown as `bob (9c1e2f3a)`, `alice: I agree` or `bob, eve`,
  /// they read as bob or alice, so they are look-alikes of them, and both show their ids.
  @Test(
    "names that read as another's label",
    arguments: [("bob", "bob (9c1e2f3a)"), ("alice", "alice: I agree"), ("bob", "bob, eve"), ("bob", "Bоb (x)")])
  func labelShapedNames(_ first: String, _ second: String) {
    var names = KnownPeerNames()
    let a = Self.peer(first, 1)
    let b = Self.peer(second, 2)
    names.note(a)
    names.note(b)
    #expect(names.looksAlike(a) && names.looksAlike(b))
    #expect(names.label(b) == "\(second) (\(b.id.shortHex))")
  }

  @Test("names that do not look alike", arguments: [("bob", "rob"), ("alice", "alicia"), ("ian", "lan"), ("anna", "аnnа2"), ("bob", "rob (bob)")])
  func different(_ first: String, _ second: String) {
    var names = KnownPeerNames()
    names.note(Self.peer(first, 1))
    names.note(Self.peer(second, 2))
    #expect(!names.looksAlike(Self.peer(first, 1)))
    #expect(names.label(Self.peer(first, 1)) == first)
  }

  @Test func theSamePeerUnderANewNameIsNotItsOwnLookalike() {
    var names = KnownPeerNames()
    names.note(Self.peer("bob", 1))
    names.note(Self.peer("Bob", 1))
    #expect(!names.looksAlike(Self.peer("Bob", 1)))
    names.note(Self.peer("carol", 1))
    names.note(Self.peer("bob", 2))
    #expect(!names.looksAlike(Self.peer("bob", 2)), "the old name was forgotten")
  }

  @Test func aLookalikeMakesBothSendersShowTheirIds() {
    let output = PlainOutput(json: false)
    let bob = Self.peer("bob", 1)
    let impostor = Self.peer("bоb", 2)
    #expect(output.render(Self.message("hi", from: bob))?.hasSuffix("] bob: hi") == true)
    _ = output.render(Self.connected(impostor))
    #expect(output.render(Self.message("hi", from: bob))?.hasSuffix("] bob (\(bob.id.shortHex)): hi") == true)
    #expect(output.render(Self.message("hi", from: impostor))?.hasSuffix("] bоb (\(impostor.id.shortHex)): hi") == true)
  }

  @Test func aPeerNamedLikeUsShowsItsId() {
    let output = PlainOutput(json: false)
    let me = Self.peer("alice", 1)
    let other = Self.peer("Alice", 2)
    _ = output.render(.ready(me, port: 1, service: .default))
    #expect(output.render(Self.message("it is me", from: other))?.hasSuffix("] Alice (\(other.id.shortHex)): it is me") == true)
  }

  @Test func peersReachedThroughRelaysSayWhetherTheirKeysAreVerified() throws {
    let relay = Self.peer("r1", 3)
    let carol = Self.peer("carol", 4)
    let dave = Self.peer("dave", 5)
    let line = ChatLine.relayed([
      RelayedPeer(peer: carol, via: relay, isVerified: false),
      RelayedPeer(peer: dave, via: relay, site: PeerSite(name: "site3", isOnline: true), isVerified: true),
    ])
    #expect(
      PlainOutput(json: false).render(line)
        == "* through relays: carol (\(carol.id.shortHex)) [unverified] via r1 (\(relay.id.shortHex)), dave (\(dave.id.shortHex)) via r1 (\(relay.id.shortHex)) at site3"
    )
    let json = try #require(PlainOutput(json: true).render(line))
    #expect(json.contains(#""verified":false"#) && json.contains(#""verified":true"#), "\(json)")
  }

  @Test func theMemoryOfNamesIsBounded() {
    var names = KnownPeerNames()
    let first = Self.peer("first", 0)
    names.note(first)
    for index in 1...UInt64(KnownPeerNames.capacity) { names.note(Self.peer("p\(index)", index)) }
    names.note(Self.peer("first", 99_999))
    #expect(!names.looksAlike(Self.peer("first", 99_999)), "the oldest peer was forgotten")
  }
}
