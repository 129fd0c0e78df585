import Foundation
import NearbyChat
import Testing

@testable import Nearby
@testable import NearbyCore
@testable import NearbyTerminalUI

@Suite struct ChatLineStylerTests {
  let styler = ChatLineStyler(me: Fixtures.alice)

  func text(_ line: ChatLine) -> [String] {
    styler.entries(for: line, now: Fixtures.noon).map { ChatScreenHarness.untimed($0.line.plain) }
  }

  func message(_ text: String, from peer: Peer = Fixtures.bob, isPrivate: Bool = false, inPeerConversation: Bool = false) -> ScreenEntry {
    styler.message(
      ReceivedMessage(id: 7, from: peer, isPrivate: isPrivate, timestamp: 0, body: Array(text.utf8)), now: Fixtures.noon,
      inPeerConversation: inPeerConversation)
  }

  @Test func everyLineHasATimestamp() {
    #expect(message("hi").line.plain.range(of: #"^\[\d\d:\d\d:\d\d\] "#, options: .regularExpression) != nil)
    #expect(text(.notice("x"))[0] == "* x")
  }

  @Test func messagesFromOthersAndOwn() {
    #expect(ChatScreenHarness.untimed(message("hi").line.plain) == "  bob: hi")
    #expect(ChatScreenHarness.untimed(message("psst", isPrivate: true).line.plain) == "  bob (private): psst")
    #expect(ChatScreenHarness.untimed(message("psst", isPrivate: true, inPeerConversation: true).line.plain) == "  bob: psst")
    #expect(ChatScreenHarness.untimed(styler.own(1, text: "yo", recipients: [], mark: .pending, now: Fixtures.noon).line.plain) == ". alice: yo")
    let copy = styler.own(1, text: "yo", recipients: [Fixtures.bob, Fixtures.carol], mark: .delivered, now: Fixtures.noon)
    #expect(ChatScreenHarness.untimed(copy.line.plain) == "✓ alice -> bob, carol: yo")
    // Rows after the first are indented under the text.
    #expect(message("hi").indent == 18)
    #expect(copy.indent == 11 + 2 + DisplayWidth.of("alice -> bob, carol: "))
  }

  @Test func peerTextCannotControlTheTerminalButKeepsItsNewlines() {
    #expect(ChatScreenHarness.untimed(message("a\u{1B}[2Jb\r\nc\u{7}").line.plain) == "  bob: a\\x1b[2Jb\nc\\x07")
    let long = message(String(repeating: "x\n", count: 300))
    #expect(long.line.plain.split(separator: "\n").count == ChatLineStyler.maximumMessageLines + 1)
    #expect(long.line.plain.hasSuffix("… 101 more lines"))
  }

  @Test func mentionsAreWholeWords() {
    #expect(ChatLineStyler.mentions("alice", in: "hi Alice!"))
    #expect(ChatLineStyler.mentions("alice", in: "alice: lunch?"))
    #expect(ChatLineStyler.mentions("Bo Diddley", in: "ask bo diddley"))
    #expect(!ChatLineStyler.mentions("alice", in: "malice aforethought"))
    #expect(!ChatLineStyler.mentions("alice", in: "alicent"))
    #expect(message("hi alice").line.spans.last?.style == .bold)
    #expect(message("hi all").line.spans.last?.style == .plain)
  }

  @Test func lookalikeNamesShowTheirIds() throws {
    var styler = ChatLineStyler(me: Fixtures.alice)
    let impostor = Fixtures.peer("bоb", 0xBAD)  // a Cyrillic о
    styler.names.note(Fixtures.message("hi", from: Fixtures.bob))
    func shown(_ text: String, from peer: Peer) -> String {
      let message = ReceivedMessage(id: 7, from: peer, isPrivate: false, timestamp: 0, body: Array(text.utf8))
      return ChatScreenHarness.untimed(styler.message(message, now: Fixtures.noon, inPeerConversation: false).line.plain)
    }
    #expect(shown("hi", from: Fixtures.bob) == "  bob: hi")
    styler.names.note(Fixtures.found(impostor))
    #expect(shown("hi", from: Fixtures.bob) == "  bob (\(Fixtures.bob.id.shortHex)): hi")
    #expect(shown("hi", from: impostor) == "  bоb (\(impostor.id.shortHex)): hi")
    let own = styler.own(1, text: "yo", recipients: [Fixtures.bob], mark: .pending, now: Fixtures.noon)
    #expect(ChatScreenHarness.untimed(own.line.plain) == ". alice -> bob (\(Fixtures.bob.id.shortHex)): yo")
  }

  @Test func hiddenCharactersInPeerTextAreEscaped() {
    #expect(ChatScreenHarness.untimed(message("see \u{202E}fdp.exe").line.plain) == "  bob: see \\u{202E}fdp.exe")
  }

  @Test func noticesAndErrorsHaveAKindMark() {
    #expect(text(.notice("hello")) == ["* hello"])
    #expect(text(.error("no peer")) == ["! no peer"])
    #expect(text(.who([], verified: [])) == ["* nobody is connected"])
  }

  @Test func discoveryIsQuiet() {
    // No addresses (/peers has them).
    #expect(text(Fixtures.found(Fixtures.bob)) == ["* found bob (12345678)"])
    #expect(text(.event(.lost(Fixtures.bob))) == ["* lost bob (12345678)"])
    let renamed = Fixtures.peer("robert", 0xB0B)
    let updated = ChatLine.event(.updated(DiscoveredPeer(advertisement: PeerAdvertisement(peer: renamed), hostName: "b.local.", endpoints: [])))
    #expect(styler.entries(for: updated, now: Fixtures.noon, previousName: "robert").isEmpty)
    #expect(styler.entries(for: updated, now: Fixtures.noon, previousName: nil).isEmpty)
    let shown = styler.entries(for: updated, now: Fixtures.noon, previousName: "bob").map { ChatScreenHarness.untimed($0.line.plain) }
    #expect(shown == ["* bob is now called robert (12345678)"])
  }

  @Test func multiLineAnswersBecomeSeveralEntries() {
    let help = styler.entries(for: .notice(ChatCommand.helpText), now: Fixtures.noon)
    #expect(help.count == ChatCommand.helpText.split(separator: "\n").count)
  }

  @Test func stylesOfTheKinds() {
    let own = styler.own(9, text: "yo", recipients: [], mark: .pending, now: Fixtures.noon)
    #expect(own.messageID == 9 && own.kind == .own)
    #expect(own.line.spans[1] == DeliveryMark.pending.span)
    let incoming = message("hi")
    #expect(incoming.kind == .message)
    #expect(incoming.line.spans.contains(StyledSpan("bob", styler.nameStyle(of: Fixtures.bob.id))))
    let notice = styler.entries(for: .notice("x"), now: Fixtures.noon)[0]
    #expect(notice.line.spans.allSatisfy { $0.style == .dim } && notice.kind == .notice)
    let invitation = styler.entries(for: Fixtures.invitation(from: Fixtures.bob), now: Fixtures.noon)[0]
    #expect(invitation.line.spans.last?.style == .attention)
  }

  @Test func peerColorsAreStableAndSpread() {
    #expect(styler.nameStyle(of: Fixtures.bob.id) == ChatLineStyler(me: Fixtures.carol).nameStyle(of: Fixtures.bob.id))
    var seen: Set<UInt8> = []
    var basic: Set<UInt8> = []
    let plainStyler = ChatLineStyler(me: Fixtures.alice, extendedColors: false)
    for low in 1...300 {
      let id = PeerID(high: 7, low: UInt64(low))
      if let color = styler.nameStyle(of: id).palette { seen.insert(color) }
      if let color = plainStyler.nameStyle(of: id).foreground { basic.insert(color) }
    }
    #expect(seen == Set(ChatLineStyler.peerPalette))
    #expect(basic == Set(ChatLineStyler.peerColors))
  }

  @Test func thePaletteIsReadableOnDarkAndLight() {
    // WCAG contrast of each 256-color cube entry against black and against white.
    func luminance(_ index: UInt8) -> Double {
      let levels = [0.0, 95, 135, 175, 215, 255]
      let cube = Int(index) - 16
      func linear(_ value: Double) -> Double {
        let c = value / 255
        return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055).power(2.4)
      }
      return 0.2126 * linear(levels[cube / 36]) + 0.7152 * linear(levels[cube / 6 % 6]) + 0.0722 * linear(levels[cube % 6])
    }
    for color in ChatLineStyler.peerPalette {
      let l = luminance(color)
      #expect((l + 0.05) / 0.05 >= 3.8, "\(color) on black")
      #expect(1.05 / (l + 0.05) >= 3.8, "\(color) on white")
    }
  }
}

extension Double {
  func power(_ exponent: Double) -> Double { Foundation.pow(self, exponent) }
}

@Suite struct PeerRosterTests {
  @Test func followsEvents() {
    var roster = PeerRoster()
    roster.apply(Fixtures.found(Fixtures.bob))
    roster.apply(Fixtures.found(Fixtures.carol))
    roster.apply(Fixtures.invitation(from: Fixtures.bob))
    #expect(roster.found.count == 2 && roster.inviting.count == 1)
    roster.apply(.event(.connected(Fixtures.bob, PeerSecurity(verificationCode: "123456", isVerified: false))))
    #expect(roster.connected.count == 1 && roster.inviting.isEmpty)
    roster.apply(.event(.lost(Fixtures.carol)))
    roster.apply(.event(.disconnected(Fixtures.bob, .local(.leaving))))
    #expect(roster.found.count == 1 && roster.connected.isEmpty)
    #expect(roster.names == ["bob"])
  }

  @Test func answersReplaceWhatWasKnown() {
    var roster = PeerRoster()
    roster.apply(Fixtures.found(Fixtures.bob))
    roster.apply(.who([Fixtures.carol], verified: []))
    roster.apply(.peers([]))
    #expect(roster.found.isEmpty)
    #expect(roster.names == ["carol"])
  }
}
