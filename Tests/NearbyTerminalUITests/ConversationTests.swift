import Foundation
import NearbyChat
import NearbyCore
import Testing

@testable import NearbyTerminalUI

/// Conversations: one with everyone and one per peer, switched with Alt-number, Alt-arrows
/// and Ctrl-P/Ctrl-N, with unread counts and alerts in the status bar, an unread marker on
/// coming back, and the bell for what needs attention elsewhere.
@Suite struct ConversationTests {
  /// A chat that knows bob and carol, connected.
  static func connectedChat(columns: Int = 60, rows: Int = 12, bell: Bool = true) -> ChatScreenHarness {
    var chat = ChatScreenHarness(columns: columns, rows: rows, bell: bell)
    chat.send(.roster(found: [Fixtures.bob, Fixtures.carol], connected: [Fixtures.bob, Fixtures.carol], inviting: []))
    return chat
  }

  @Test func aPrivateMessageOpensAConversationMarkedInTheStatusBarWithABell() {
    var chat = Self.connectedChat()
    chat.receive(Fixtures.message("in the open", from: Fixtures.carol))
    #expect(chat.terminal.bells == 0, "a public message in the conversation shown")
    chat.receive(Fixtures.message("psst", from: Fixtures.bob, isPrivate: true))
    #expect(chat.terminal.bells == 1)
    #expect(chat.statusBar == "[1:all] 2:bob(1!) │ alice: 2 connected, 2 found")
    #expect(chat.logContent == ["  carol: in the open"], "not in the conversation with everyone")
    #expect(chat.effects.contains(.openLog(.peer(Fixtures.bob.id))))
    chat.receive(Fixtures.message("and again", from: Fixtures.bob, isPrivate: true))
    #expect(chat.statusBar.hasPrefix("[1:all] 2:bob(2!) │"))
    #expect(chat.terminal.bells == 2)
  }

  @Test func altNumberSwitchesAndAnUnreadMarkerShowsWhatCameWhileAway() {
    var chat = Self.connectedChat()
    chat.receive(Fixtures.message("one", from: Fixtures.carol))
    chat.receive(Fixtures.message("psst", from: Fixtures.bob, isPrivate: true))
    chat.type(Keys.alt("2"))
    #expect(chat.lastRow == "[bob]")
    #expect(chat.logContent == ["  bob: psst"], "no marker in a conversation that is all new")
    #expect(chat.statusBar.hasPrefix("1:all [2:bob] │"))
    chat.receive(Fixtures.message("two", from: Fixtures.carol))
    chat.receive(Fixtures.message("three", from: Fixtures.carol))
    #expect(chat.statusBar.hasPrefix("1:all(2) [2:bob] │"))
    #expect(chat.terminal.bells == 1, "public messages elsewhere: counted, no bell")
    chat.type(Keys.alt("1"))
    #expect(chat.logContent == ["  carol: one", "─── unread " + String(repeating: "─", count: 49), "  carol: two", "  carol: three"])
    #expect(chat.statusBar.hasPrefix("[1:all] 2:bob │"))
    // Back and forth with nothing new: no marker.
    chat.type(Keys.alt("2") + Keys.alt("1"))
    #expect(chat.logContent == ["  carol: one", "  carol: two", "  carol: three"])
    // A conversation that does not exist: the bell, nothing else.
    chat.type(Keys.alt("7"))
    #expect(chat.terminal.bells == 2 && chat.model.current == 0)
  }

  @Test func altArrowsAndCtrlPNGoRound() {
    var chat = Self.connectedChat()
    chat.receive(Fixtures.message("b", from: Fixtures.bob, isPrivate: true))
    chat.receive(Fixtures.message("c", from: Fixtures.carol, isPrivate: true))
    var shown: [String] = []
    for key in [Keys.altRight, Keys.altRight, Keys.altRight, Keys.altLeft, Keys.ctrl("p"), Keys.ctrl("n"), Keys.ctrl("n")] {
      chat.type(key)
      shown.append(chat.lastRow)
    }
    #expect(shown == ["[bob]", "[carol]", "[all]", "[carol]", "[bob]", "[carol]", "[all]"])
  }

  @Test func aLineInAPeerConversationIsAPrivateMessage() {
    var chat = Self.connectedChat(columns: 100)
    chat.type("/query bob\r")
    #expect(chat.takeSubmitted() == [], "/query is the terminal chat's own")
    #expect(chat.lastRow == "[bob]")
    chat.type("hi bob\r")
    chat.type("//slash\r")
    chat.type("/who\r")
    #expect(chat.takeSubmitted() == ["/msg \(Fixtures.bob.id.hex) hi bob", "/msg \(Fixtures.bob.id.hex) /slash", "/who"])
    // The answer to a command lands where it was typed.
    chat.receive(.who([Fixtures.bob, Fixtures.carol], verified: [Fixtures.bob.id]))
    #expect(chat.logContent.suffix(2) == ["> /who", "* connected: bob (12345678), carol (12345678) [unverified]"])
    // Not connected any more: an error, and the text stays in the input.
    chat.receive(.event(.disconnected(Fixtures.bob, .local(.leaving))))
    chat.type("still there?\r")
    #expect(chat.takeSubmitted() == [])
    #expect(chat.log.last?.hasPrefix("! bob (12345678) is not connected: /invite bob first") == true)
    #expect(chat.lastRow == "[bob] still there?")
  }

  @Test func aMessageQueuedForAnOfflinePeerIsMarkedUntilItIsDelivered() {
    var chat = Self.connectedChat()
    chat.type("/query bob\r")
    chat.receive(.sent(id: 4, text: "when you are back", to: [Fixtures.bob], isPrivate: true))
    chat.receive(.event(.queued(messageID: 4, to: Fixtures.bob)))
    #expect(chat.logContent.first == "~ alice: when you are back")
    // The notice is in bob's conversation, beside the message (wrapped at the terminal's width).
    #expect(chat.logContent.dropFirst().first == "* queued #4 for bob (12345678): offline,", "\(chat.logContent)")
    chat.type(Keys.alt("1"))
    #expect(!chat.logContent.contains { $0.contains("queued") }, "not in everyone's")
    chat.type(Keys.alt("2"))
    chat.receive(.settled(DeliveryReport(messageID: 4, recipients: 1, delivered: 1, failures: [])))
    #expect(chat.logContent.first == "✓ alice: when you are back")
  }

  @Test func ownPrivateMessagesGoToThePeerAndACopyStaysWhereTyped() {
    var chat = Self.connectedChat()
    chat.receive(.sent(id: 3, text: "between us", to: [Fixtures.bob], isPrivate: true))
    #expect(chat.logContent == [". alice -> bob: between us"])
    chat.receive(.settled(DeliveryReport(messageID: 3, recipients: 1, delivered: 1, failures: [])))
    #expect(chat.logContent == ["✓ alice -> bob: between us"])
    chat.type(Keys.alt("2"))
    #expect(chat.logContent == ["✓ alice: between us"])
    #expect(chat.statusBar.hasPrefix("1:all [2:bob] │"), "own messages are not unread")
    #expect(chat.logged.map(\.conversation) == [.peer(Fixtures.bob.id), .peer(Fixtures.bob.id)])
    #expect(chat.logged.map(\.record.kind) == [.sent, .delivered])
  }

  /// A private message to bob and carol, who could not be reached: the session names both as
  /// its recipients (`recipients(of:)`), carol's answer (undelivered) may come before the line
  /// that shows it sent, and the message is marked failed where it was typed and kept in both
  /// conversations' histories.
  @Test func aPrivateMessageToAPeerThatFailedAtOnceIsMarkedFailedAndKeptInItsHistory() {
    var chat = Self.connectedChat(columns: 100)
    chat.receive(.event(.error(.undelivered(messageID: 7, peer: Fixtures.carol, peerID: Fixtures.carol.id, reason: .notConnected))))
    chat.receive(.sent(id: 7, text: "lunch?", to: [Fixtures.bob, Fixtures.carol], isPrivate: true))
    #expect(chat.logContent.contains { $0.hasPrefix("! message 7 to carol") && $0.contains("not delivered") }, "\(chat.logContent)")
    #expect(chat.logContent.last == ". alice -> bob, carol: lunch?")
    chat.receive(.event(.delivered(messageID: 7, to: Fixtures.bob)))
    chat.receive(
      .settled(
        DeliveryReport(
          messageID: 7, recipients: 2, delivered: 1,
          failures: [DeliveryFailure(peerID: Fixtures.carol.id, peer: Fixtures.carol, reason: .notConnected)])))
    #expect(chat.logContent.last == "✗ alice -> bob, carol: lunch?")
    let sent = chat.logged.filter { $0.record.kind == .sent }.map(\.conversation)
    #expect(Set(sent) == [.peer(Fixtures.bob.id), .peer(Fixtures.carol.id)])
    #expect(chat.logged.contains { $0.record.kind == .failed && $0.conversation == .peer(Fixtures.carol.id) })
  }

  @Test func queryAndClose() {
    var chat = Self.connectedChat(columns: 100)
    chat.type("/query dave\r")
    #expect(chat.log.last == "! no peer called 'dave'; /peers lists the peers found, /who the connected ones")
    chat.type("/query CAROL\r")
    #expect(chat.lastRow == "[carol]")
    #expect(chat.statusBar.hasPrefix("1:all [2:carol] │"))
    chat.type("/close\r")
    #expect(chat.lastRow == "[all]")
    #expect(chat.model.conversations.count == 1)
    chat.type("/close\r")
    #expect(chat.log.last == "! the conversation with everyone stays open; /quit leaves the chat")
    #expect(chat.takeSubmitted() == [])
  }

  @Test func newsAboutAPeerAlsoGoesToTheirConversation() {
    var chat = Self.connectedChat()
    chat.type("/query bob\r")
    chat.receive(.event(.disconnected(Fixtures.bob, .local(.leaving))))
    #expect(chat.log.last?.hasPrefix("* disconnected from bob (12345678)") == true)
    chat.type(Keys.alt("1"))
    #expect(chat.log.last?.hasPrefix("* disconnected from bob (12345678)") == true)
  }

  @Test func verificationNewsGoesToThePeersConversationToo() {
    var chat = Self.connectedChat(columns: 120)
    chat.type("/query bob\r")
    chat.receive(.event(.verification(Fixtures.bob, code: "123456", askedByPeer: true)))
    let asked = "* bob (12345678) asks you to compare codes: 123 456 — if bob sees the same, type /trust bob"
    #expect(chat.log.last == asked)
    chat.receive(.event(.impostorWarning(Fixtures.peer("bob", 0xBAD), verified: Fixtures.bob)))
    #expect(chat.log.last?.hasPrefix("! bob (12345678) calls itself bob but is not the bob (12345678) you verified") == true)
    chat.type(Keys.alt("1"))
    #expect(chat.logContent.suffix(2).first == asked)
  }

  @Test func invitationsAndMentionsElsewhereRingTheBell() {
    var chat = Self.connectedChat()
    chat.type("/query bob\r")
    chat.receive(Fixtures.invitation(from: Fixtures.peer("dave", 0xDA7E)))
    #expect(chat.terminal.bells == 1)
    chat.receive(Fixtures.message("where is Alice?", from: Fixtures.carol))
    #expect(chat.terminal.bells == 2)
    #expect(chat.statusBar.hasPrefix("1:all(1!) [2:bob] │"))
    chat.receive(Fixtures.message("where is everybody?", from: Fixtures.carol))
    #expect(chat.terminal.bells == 2)
    #expect(chat.statusBar.hasPrefix("1:all(2!) [2:bob] │"))
  }

  @Test func noBellWithItTurnedOff() {
    var chat = Self.connectedChat(bell: false)
    chat.receive(Fixtures.message("psst", from: Fixtures.bob, isPrivate: true))
    chat.receive(Fixtures.message("hi alice", from: Fixtures.carol))
    #expect(chat.terminal.bells == 0)
    #expect(chat.statusBar.hasPrefix("[1:all] 2:bob(1!) │"))
  }

  @Test func aRenamedPeerRenamesItsConversation() {
    var chat = Self.connectedChat()
    chat.receive(Fixtures.found(Fixtures.bob))
    chat.receive(Fixtures.message("psst", from: Fixtures.bob, isPrivate: true))
    let robert = Fixtures.peer("robert", 0xB0B)
    chat.receive(.event(.updated(DiscoveredPeer(advertisement: PeerAdvertisement(peer: robert), hostName: "b.local.", endpoints: []))))
    #expect(chat.statusBar.hasPrefix("[1:all] 2:robert(1!) │"))
    #expect(chat.log.last == "* bob is now called robert (12345678)")
  }

  @Test func theStatusBarShowsAPeersMark() {
    var chat = Self.connectedChat()
    chat.receive(Fixtures.message("psst", from: Fixtures.bob, isPrivate: true))
    chat.model.roster.setMark("?", for: Fixtures.bob.id)
    chat.send(.redraw)
    #expect(chat.statusBar.hasPrefix("[1:all] 2:bob ?(1!) │"))
  }

  @Test func helpListsTheCommandsAndHelpKeysEveryKey() {
    var chat = ChatScreenHarness(columns: 200, rows: 40)
    chat.type("/help keys\r")
    #expect(chat.takeSubmitted() == [])
    for binding in KeyBindings.all {
      #expect(chat.logContent.contains { $0.hasPrefix("* " + binding.keys) && $0.hasSuffix(binding.action) }, "\(binding.keys)")
    }
    chat.type("/help\r")
    #expect(chat.logContent.contains { $0.hasPrefix("* /query NAME|ID") })
    #expect(chat.logContent.contains { $0.hasPrefix("* /accept [NAME|ID]") })
    #expect(chat.logContent.contains { $0.hasPrefix("* /help keys") })
  }

  @Test func theStatusBarIsCutOnANarrowTerminal() {
    var chat = Self.connectedChat(columns: 30)
    chat.receive(Fixtures.message("b", from: Fixtures.bob, isPrivate: true))
    chat.receive(Fixtures.message("c", from: Fixtures.carol, isPrivate: true))
    #expect(chat.statusBar == "[1:all] 2:bob(1!) 3:carol(1!)…")
  }
}

@Suite struct KeyBindingsDocumentationTests {
  /// The README's table of keys is the one `/help keys` shows.
  @Test func theReadmeListsEveryKey() throws {
    var url = URL(fileURLWithPath: #filePath)
    for _ in 0..<3 { url.deleteLastPathComponent() }
    let readme = try String(contentsOf: url.appendingPathComponent("README.md"), encoding: .utf8)
    for binding in KeyBindings.all {
      let row = "| \(binding.keys.replacingOccurrences(of: "|", with: "\\|")) | \(binding.action.replacingOccurrences(of: "|", with: "\\|")) |"
      #expect(readme.contains(row), "README.md lacks: \(row)")
    }
  }
}
