import NearbyChat
import Testing

@testable import Nearby
@testable import NearbyCore
@testable import NearbyTerminalUI

/// What the security and files features show in the terminal chat: a mark in the status bar
/// for each connected peer whose key is not verified, gone once it is; transfers in the
/// conversation with their peer, progress bars above the status bar, and Tab completing
/// offer and transfer ids.
@Suite struct TransferAndTrustTests {
  static func connected(_ peer: Peer, verified: Bool) -> ChatLine {
    .event(.connected(peer, PeerSecurity(verificationCode: "123456", isVerified: verified)))
  }

  static let offerID = TransferID(PeerID(high: 0xFEED_0000_0000_0001, low: 1))
  static let secondID = TransferID(PeerID(high: 0xBEEF_0000_0000_0002, low: 2))

  static func offer(_ id: TransferID = offerID, from peer: Peer = Fixtures.bob) -> ChatLine {
    .event(.transfer(.offer(IncomingOffer(id: id, from: peer, files: [OfferedFile(name: "photos/a.jpg", size: 13_000_000)], responder: nil))))
  }

  static func progress(_ id: TransferID = offerID, bytes: UInt64, total: UInt64 = 13_000_000, rate: UInt64 = 0, peer: Peer = Fixtures.bob)
    -> TransferProgress
  {
    TransferProgress(
      id: id, peer: peer, direction: .receive, bytes: bytes, total: total, rate: rate, filesDone: 0, fileCount: 1, currentFile: "photos/a.jpg")
  }

  static func finished(_ id: TransferID = offerID, peer: Peer = Fixtures.bob) -> ChatLine {
    .event(.transfer(.finished(id: id, peer: peer, direction: .receive, end: .completed, files: [])))
  }

  // MARK: Unverified marks

  @Test func anUnverifiedPeerIsMarkedInTheStatusBarUntilItIsTrusted() {
    var chat = ChatScreenHarness(columns: 70, rows: 12)
    chat.receive(Self.connected(Fixtures.bob, verified: false))
    chat.receive(Self.connected(Fixtures.carol, verified: true))
    chat.receive(Fixtures.message("psst", from: Fixtures.bob, isPrivate: true))
    chat.receive(Fixtures.message("hi", from: Fixtures.carol, isPrivate: true))
    #expect(chat.statusBar.hasPrefix("[1:all] 2:bob ?(1!) 3:carol(1!) │"), "\(chat.statusBar)")
    chat.receive(.event(.trusted(Fixtures.bob)))
    #expect(chat.statusBar.hasPrefix("[1:all] 2:bob(1!) 3:carol(1!) │"), "\(chat.statusBar)")
    // Connected again later, with another key (not the verified one): marked again.
    chat.receive(Self.connected(Fixtures.bob, verified: false))
    #expect(chat.statusBar.hasPrefix("[1:all] 2:bob ?(1!)"), "\(chat.statusBar)")
  }

  @Test func whoSetsTheMarksOfEveryConnectedPeer() {
    var chat = ChatScreenHarness(columns: 70, rows: 12)
    chat.receive(Fixtures.message("b", from: Fixtures.bob, isPrivate: true))
    chat.receive(Fixtures.message("c", from: Fixtures.carol, isPrivate: true))
    chat.receive(.who([Fixtures.bob, Fixtures.carol], verified: [Fixtures.carol.id]))
    #expect(chat.statusBar.hasPrefix("[1:all] 2:bob ?(1!) 3:carol(1!) │"), "\(chat.statusBar)")
    chat.receive(.who([Fixtures.bob, Fixtures.carol], verified: [Fixtures.carol.id, Fixtures.bob.id]))
    #expect(chat.statusBar.hasPrefix("[1:all] 2:bob(1!) 3:carol(1!) │"), "\(chat.statusBar)")
  }

  @Test func aPeerReachedThroughARelayIsMarkedUnlessItsKeyIsVerified() {
    var chat = ChatScreenHarness(columns: 70, rows: 12)
    let relay = Fixtures.peer("r1", 0x7E1A)
    chat.receive(.event(.reachable(Fixtures.carol, via: relay)))
    chat.receive(Fixtures.message("c", from: Fixtures.carol, isPrivate: true))
    #expect(chat.statusBar.hasPrefix("[1:all] 2:carol ?(1!) │"), "\(chat.statusBar)")
    // The session's snapshot: carol's key was verified (in a direct session, once).
    chat.send(.roster(found: [], connected: [], inviting: [], verified: [Fixtures.carol.id]))
    #expect(chat.statusBar.hasPrefix("[1:all] 2:carol(1!) │"), "\(chat.statusBar)")
    // Forgotten since (`nearby peers forget`): /who's list of relayed peers says so.
    chat.receive(.relayed([RelayedPeer(peer: Fixtures.carol, via: relay, isVerified: false)]))
    #expect(chat.statusBar.hasPrefix("[1:all] 2:carol ?(1!) │"), "\(chat.statusBar)")
    // Reachable again later, once the chat knows the key is verified: no mark.
    chat.receive(.event(.trusted(Fixtures.carol)))
    chat.receive(.event(.unreachable(Fixtures.carol)))
    chat.receive(.event(.reachable(Fixtures.carol, via: relay)))
    #expect(chat.statusBar.hasPrefix("[1:all] 2:carol(1!) │"), "\(chat.statusBar)")
    // A snapshot without the verified set leaves what the chat knows.
    chat.send(.roster(found: [], connected: [], inviting: []))
    #expect(chat.statusBar.hasPrefix("[1:all] 2:carol(1!) │"), "\(chat.statusBar)")
  }

  // MARK: Transfers

  @Test func anOfferOpensThePeersConversationCountsAsUnreadAndRings() {
    var chat = ChatScreenHarness(columns: 80, rows: 12)
    chat.receive(Self.offer())
    #expect(chat.effects.contains(.openLog(.peer(Fixtures.bob.id))))
    #expect(chat.statusBar.hasPrefix("[1:all] 2:bob(1!) │"), "\(chat.statusBar)")
    #expect(chat.terminal.bells == 1)
    #expect(chat.logContent.contains { $0.contains("bob") && $0.contains("/receive") }, "\(chat.logContent)")
    chat.type(Keys.alt("2"))
    #expect(chat.logContent.contains { $0.contains("photos/a.jpg") && $0.contains("/receive") }, "\(chat.logContent)")
    // Shown: a second offer from bob does not ring and counts nothing.
    chat.receive(Self.offer(Self.secondID))
    #expect(chat.terminal.bells == 1)
    #expect(chat.statusBar.hasPrefix("1:all [2:bob] │"), "\(chat.statusBar)")
    #expect(chat.shown.unread == 0)
  }

  @Test func aProgressBarAppearsUpdatesInPlaceAndGoesAway() {
    var chat = ChatScreenHarness(columns: 110, rows: 12)
    chat.receive(Self.offer())
    chat.receive(.event(.transfer(.started(Self.progress(bytes: 0)))))
    let barRow = { (chat: ChatScreenHarness) in chat.terminal.lines[chat.terminal.lines.count - chat.model.inputView.rows.count - 2] }
    #expect(barRow(chat).hasPrefix("↓ bob  ["), "\(chat.screen)")
    #expect(barRow(chat).contains("0%"), "\(barRow(chat))")
    let linesBefore = chat.logContent.count
    chat.receive(.event(.transfer(.progress(Self.progress(bytes: 6_500_000, rate: 1_000_000)))))
    #expect(barRow(chat).contains("50%") && barRow(chat).contains("/s") && barRow(chat).contains("ETA"), "\(barRow(chat))")
    #expect(barRow(chat).contains("photos/a.jpg"))
    #expect(chat.logContent.count == linesBefore, "progress adds no line: the bar changes in place")
    let filled = barRow(chat).filter { $0 == "█" }.count
    let empty = barRow(chat).filter { $0 == "░" }.count
    #expect(filled > 0 && abs(filled - empty) <= 1, "half full: \(filled) of \(filled + empty)")
    chat.receive(Self.finished())
    #expect(!chat.screen.contains { $0.hasPrefix("↓ bob") }, "the bar is gone: \(chat.screen)")
    #expect(chat.model.transferBars.isEmpty)
  }

  @Test func atMostThreeBarsThenACountAndNoneOnATinyTerminal() {
    var chat = ChatScreenHarness(columns: 80, rows: 14)
    let ids = (1...5).map { TransferID(PeerID(high: 0xA000, low: UInt64($0))) }
    for id in ids { chat.receive(.event(.transfer(.started(Self.progress(id, bytes: 100))))) }
    let bars = chat.screen.filter { $0.hasPrefix("↓ bob") }
    #expect(bars.count == 2, "\(chat.screen)")
    #expect(chat.screen.contains { $0.contains("… and 3 more transfers (/transfers)") }, "\(chat.screen)")
    chat.resize(columns: 80, rows: 7)
    #expect(!chat.screen.contains { $0.hasPrefix("↓ bob") || $0.contains("more transfers") }, "\(chat.screen)")
    // Narrow: the bar shrinks or goes, the row never wraps.
    chat.resize(columns: 30, rows: 14)
    for row in chat.screen { #expect(DisplayWidth.of(row) <= 30, "\(row)") }
    #expect(chat.screen.contains { $0.hasPrefix("↓ bob") })
  }

  /// A paste of many lines while transfers run: the input and status bar keep their rows and
  /// the bars give way; the frame never has more rows than the terminal (it had two more,
  /// and the terminal clipped the input's last rows).
  @Test func aLongInputTakesTheRowsOfTheBars() {
    var chat = ChatScreenHarness(columns: 80, rows: 12)
    let ids = (1...3).map { TransferID(PeerID(high: 0xB000, low: UInt64($0))) }
    for id in ids { chat.receive(.event(.transfer(.started(Self.progress(id, bytes: 100))))) }
    #expect(chat.model.frame.rows.count == 12)
    chat.type(Keys.paste((1...15).map { "line \($0)" }.joined(separator: "\n")))
    let frame = chat.model.frame
    #expect(frame.rows.count == 12, "\(frame.rows.count) rows on a terminal of 12")
    #expect(frame.cursorRow <= 12)
    #expect(chat.screen.contains { $0.contains("line 15") }, "the input's last row is on the screen: \(chat.screen)")
    for rows in [11, 9, 8, 3, 2, 1] {
      chat.resize(columns: 80, rows: rows)
      #expect(chat.model.frame.rows.count == rows, "\(chat.model.frame.rows.count) rows on a terminal of \(rows)")
    }
  }

  @Test func tabCompletesOfferIdsAfterReceiveAndTransfersAfterCancelNeverNames() {
    var chat = ChatScreenHarness(columns: 80, rows: 12)
    chat.send(.roster(found: [Fixtures.bob], connected: [Fixtures.bob], inviting: []))
    chat.receive(Self.offer())
    chat.type("/receive " + Keys.tab)
    #expect(chat.model.editor.text == "/receive \(Self.offerID.shortHex) ", "\(chat.model.editor.text)")
    chat.type(Keys.ctrl("u"))
    chat.type("/refuse b" + Keys.tab)
    #expect(chat.model.editor.text == "/refuse b", "no peer name after /refuse: \(chat.model.editor.text)")
    chat.type(Keys.ctrl("u"))
    chat.receive(.event(.transfer(.started(Self.progress(bytes: 0)))))
    chat.receive(.event(.transfer(.started(Self.progress(Self.secondID, bytes: 0)))))
    chat.type("/receive " + Keys.tab)
    #expect(chat.model.editor.text == "/receive ", "no offer is pending any more")
    chat.type(Keys.ctrl("u"))
    chat.type("/cancel " + String(Self.secondID.shortHex.prefix(4)) + Keys.tab)
    #expect(chat.model.editor.text == "/cancel \(Self.secondID.shortHex) ", "\(chat.model.editor.text)")
  }

  @Test func anInvitationFromThePeerShownDoesNotRing() {
    var chat = ChatScreenHarness(columns: 80, rows: 12)
    chat.receive(Fixtures.message("psst", from: Fixtures.bob, isPrivate: true))
    chat.type(Keys.alt("2"))
    let bells = chat.terminal.bells
    chat.receive(Fixtures.invitation(from: Fixtures.bob))
    #expect(chat.terminal.bells == bells, "shown where it is read")
    chat.receive(Fixtures.invitation(from: Fixtures.carol))
    #expect(chat.terminal.bells == bells + 1)
  }

  @Test func aPrivateMessageToSeveralPeersIsKeptInEachOnesHistory() {
    var chat = ChatScreenHarness(columns: 80, rows: 12)
    chat.receive(.sent(id: MessageID(rawValue: 42), text: "to both", to: [Fixtures.bob, Fixtures.carol], isPrivate: true))
    let sent = chat.logged.filter { $0.record.kind == .sent }
    #expect(Set(sent.map(\.conversation)) == [.peer(Fixtures.bob.id), .peer(Fixtures.carol.id)])
    #expect(sent.allSatisfy { $0.record.text == "to both" })
    chat.receive(.settled(DeliveryReport(messageID: MessageID(rawValue: 42), recipients: 2, delivered: 2, failures: [])))
    let delivered = chat.logged.filter { $0.record.kind == .delivered }
    #expect(Set(delivered.map(\.conversation)) == [.peer(Fixtures.bob.id), .peer(Fixtures.carol.id)])
  }
}
