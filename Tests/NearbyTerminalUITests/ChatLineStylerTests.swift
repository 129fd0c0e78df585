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

  @Test func everyLineHasATimestamp() {
    let plain = styler.entries(for: Fixtures.message("hi", from: Fixtures.bob), now: Fixtures.noon)[0].line.plain
    #expect(plain.range(of: #"^\[\d\d:\d\d:\d\d\] "#, options: .regularExpression) != nil)
  }

  @Test func messagesFromOthersAndOwn() {
    #expect(text(Fixtures.message("hi", from: Fixtures.bob)) == ["  bob: hi"])
    #expect(text(Fixtures.message("psst", from: Fixtures.bob, isPrivate: true)) == ["  bob (private): psst"])
    #expect(text(.sent(id: 1, text: "yo", to: [Fixtures.bob], isPrivate: false)) == [". alice: yo"])
    #expect(text(.sent(id: 1, text: "yo", to: [Fixtures.bob, Fixtures.carol], isPrivate: true)) == [". alice -> bob, carol: yo"])
  }

  @Test func peerTextCannotControlTheTerminal() {
    #expect(text(Fixtures.message("a\u{1B}[2Jb\nc", from: Fixtures.bob)) == ["  bob: a\\x1b[2Jb\\nc"])
  }

  @Test func noticesAndErrorsHaveAKindMark() {
    #expect(text(.notice("hello")) == ["* hello"])
    #expect(text(.error("no peer")) == ["! no peer"])
    #expect(text(.who([], verified: [])) == ["* nobody is connected"])
    #expect(text(Fixtures.found(Fixtures.bob)) == ["* found bob (12345678) at bob.local. "])
  }

  @Test func multiLineAnswersBecomeSeveralEntries() {
    let help = styler.entries(for: .notice(ChatCommand.helpText), now: Fixtures.noon)
    #expect(help.count == ChatCommand.helpText.split(separator: "\n").count)
  }

  @Test func stylesOfTheKinds() {
    let own = styler.entries(for: .sent(id: 9, text: "yo", to: [Fixtures.bob], isPrivate: false), now: Fixtures.noon)[0]
    #expect(own.messageID == 9)
    #expect(own.line.spans[1] == DeliveryMark.pending.span)
    let incoming = styler.entries(for: Fixtures.message("hi", from: Fixtures.bob), now: Fixtures.noon)[0]
    #expect(incoming.line.spans.contains(StyledSpan("bob", TextStyle(foreground: ChatLineStyler.color(of: Fixtures.bob.id), bold: true))))
    let notice = styler.entries(for: .notice("x"), now: Fixtures.noon)[0]
    #expect(notice.line.spans.allSatisfy { $0.style == .dim })
    let invitation = styler.entries(for: Fixtures.invitation(from: Fixtures.bob), now: Fixtures.noon)[0]
    #expect(invitation.line.spans.last?.style == .attention)
  }

  @Test func peerColorsAreStableAndSpread() {
    #expect(ChatLineStyler.color(of: Fixtures.bob.id) == ChatLineStyler.color(of: Fixtures.bob.id))
    var seen: Set<UInt8> = []
    for low in 1...200 { seen.insert(ChatLineStyler.color(of: PeerID(high: 7, low: UInt64(low)))) }
    #expect(seen == Set(ChatLineStyler.peerColors))
  }
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
