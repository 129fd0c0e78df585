import NearbyChat
import NearbyCore
import Testing

@testable import NearbyTerminalUI

/// A peer sending very long messages (a flood of 1 MiB ones) cannot make the terminal chat
/// keep them: each is kept, shown and logged up to ``ChatLineStyler/maximumMessageBytes``,
/// each conversation keeps about ``Conversation/byteCapacity`` of text, and the wrapped rows
/// cached are bounded. Before, each 1 MiB message took about 7 MiB of the chat's memory, up to
/// 10 000 of them per conversation.
@Suite struct LongMessageTests {
  /// Text of `count` bytes, after `offset` ASCII bytes, of characters `width` bytes long:
  /// the cut falls at each place inside a character.
  @Test(arguments: [1, 2, 3, 4], [0, 1, 2, 3])
  func aLongMessageIsCutBetweenCharactersWithTheCountOfWhatIsLeftOut(width: Int, offset: Int) throws {
    let character: String = ["x", "é", "€", "💻"][width - 1]
    let text = String(repeating: "a", count: offset) + String(repeating: character, count: (ChatLineStyler.maximumMessageBytes + 100) / width)
    let clipped = ChatLineStyler.clipped(text)
    let lines = clipped.split(separator: "\n", omittingEmptySubsequences: false)
    #expect(lines.count == 2)
    let kept = String(lines[0])
    #expect(kept.utf8.count <= ChatLineStyler.maximumMessageBytes)
    #expect(kept.utf8.count > ChatLineStyler.maximumMessageBytes - width, "cut no earlier than the character it falls in")
    #expect(text.hasPrefix(kept), "whole characters, as sent")
    #expect(lines[1] == "… \(text.utf8.count - kept.utf8.count) more bytes")
    // The same through the bytes of a received message.
    #expect(ChatLineStyler.clipped(Array(text.utf8)) == clipped)
    // Text that fits is untouched.
    let short = String(repeating: character, count: 100)
    #expect(ChatLineStyler.clipped(short) == short)
  }

  @Test func aFloodOfMegabyteMessagesKeepsTheChatSmall() throws {
    let budget = 256 << 10
    var chat = ChatScreenHarness(scrollbackBytes: budget)
    let body = String(repeating: "x", count: 1 << 20)
    for _ in 1...40 { chat.receive(Fixtures.message(body, from: Fixtures.bob)) }
    let all = chat.model.conversations[0]
    #expect(all.byteCount <= budget)
    #expect(all.byteCount == all.entries.reduce(0) { $0 + $1.byteCount })
    #expect(all.entries.count < 40 && all.entries.count >= budget / (ChatLineStyler.maximumMessageBytes + 100) - 1)
    #expect(all.endSerial - all.firstSerial == all.entries.count)
    let rows = chat.logContent
    #expect(rows.last?.drop { $0 == " " } == "… \((1 << 20) - ChatLineStyler.maximumMessageBytes) more bytes")
    #expect(rows.dropLast().last?.drop { $0 == " " }.allSatisfy { $0 == "x" } == true, "\(rows.suffix(3))")
    // What is logged is what was shown.
    #expect(chat.logged.count == 40)
    for (_, record) in chat.logged { #expect(record.text.utf8.count < ChatLineStyler.maximumMessageBytes + 32) }
    #expect(all.wrapCache.rowCount <= all.wrapCache.rowCapacity)
  }

  @Test func theByteBudgetKeepsTheNewestAndCountsWhatHistoryBringsBack() {
    func entry(_ bytes: Int) -> ScreenEntry { ScreenEntry(StyledLine(String(repeating: "y", count: bytes))) }
    var conversation = Conversation(id: .everyone, title: "all", capacity: 100, byteCapacity: 1000)
    for _ in 1...5 { conversation.append(entry(300)) }
    #expect(conversation.entries.count == 3 && conversation.byteCount == 900)
    #expect(conversation.firstSerial == 2)
    conversation.append(entry(5000))
    #expect(conversation.entries.count == 1 && conversation.byteCount == 5000, "the newest stays, however long")
    conversation.append(entry(10))
    #expect(conversation.entries.count == 1 && conversation.byteCount == 10)
    // History goes in front while it fits, newest of it first.
    conversation.prepend((1...10).map { _ in entry(200) })
    #expect(conversation.entries.count == 5 && conversation.byteCount == 810)
    // A line changed in place (a delivery mark) keeps the count right.
    conversation[conversation.endSerial - 1] = entry(20)
    #expect(conversation.byteCount == 820)
  }

  @Test func theWrapCacheStartsAgainPastItsRows() {
    let cache = WrapCache(capacity: 100, rowCapacity: 50)
    let long = ScreenEntry(StyledLine(String(repeating: "z", count: 400)))
    #expect(cache.rows(of: long, width: 20).count == 20)
    #expect(cache.rowCount == 20)
    _ = cache.rows(of: ScreenEntry(StyledLine(String(repeating: "z", count: 400))), width: 20)
    #expect(cache.rowCount == 40)
    _ = cache.rows(of: ScreenEntry(StyledLine(String(repeating: "z", count: 400))), width: 20)
    #expect(cache.rowCount == 20, "the third would have made 60 rows")
  }
}
