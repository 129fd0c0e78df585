import NearbyChat
import NearbyTerminalUI
import Testing

@Suite struct KeyDecoderTests {
  func decode(_ text: String) -> [Key] {
    var decoder = KeyDecoder()
    return decoder.decode(Array(text.utf8))
  }

  @Test func printableTextIsOneKey() {
    #expect(decode("hello wörld 日本") == [.text("hello wörld 日本")])
  }

  @Test func controlKeys() {
    #expect(
      decode("\u{01}\u{05}\u{02}\u{06}\u{15}\u{0B}\u{17}\u{19}\u{03}\u{04}\u{0C}\u{1A}\u{10}\u{0E}\t\r\u{7F}\u{08}") == [
        .home, .end, .left, .right, .killToStart, .killToEnd, .killWordBackward, .yank, .interrupt, .endOfInput, .redraw, .suspend,
        .previousConversation, .nextConversation, .tab, .enter, .backspace, .backspace,
      ])
  }

  @Test func arrowsHomeEndDelete() {
    #expect(decode("\u{1B}[A\u{1B}[B\u{1B}[C\u{1B}[D\u{1B}[H\u{1B}[F\u{1B}[3~") == [.up, .down, .right, .left, .home, .end, .delete])
    #expect(decode("\u{1B}OH\u{1B}OF\u{1B}OA\u{1B}[1~\u{1B}[4~\u{1B}[7~\u{1B}[8~") == [.home, .end, .up, .home, .end, .home, .end])
  }

  @Test func wordMoves() {
    #expect(
      decode("\u{1B}b\u{1B}f\u{1B}[1;5D\u{1B}[1;5C\u{1B}[1;2D\u{1B}[1;7C") == [.wordLeft, .wordRight, .wordLeft, .wordRight, .wordLeft, .wordRight])
    #expect(decode("\u{1B}d\u{1B}\u{7F}") == [.killWordForward, .killWordBackward])
  }

  /// Parameters no key has (a sign, twenty digits) count as none, and never trap: a paste can
  /// carry any bytes ("1;-9223372036854775808" made the modifier arithmetic overflow).
  @Test func outlandishParametersAreNoModifier() {
    #expect(decode("\u{1B}[1;-9223372036854775808C") == [.right])
    #expect(decode("\u{1B}[1;99999999999999999999D") == [.left])
    #expect(decode("\u{1B}[-1;5C") == [.wordRight])
  }

  @Test func carriageReturnLineFeedIsOneEnter() {
    var decoder = KeyDecoder()
    #expect(decoder.decode(Array("a\r".utf8)) == [.text("a"), .enter])
    #expect(decoder.decode(Array("\n".utf8)) == [])
    #expect(decoder.decode(Array("b\n".utf8)) == [.text("b"), .enter])
    #expect(decoder.decode(Array("\r\n".utf8)) == [.enter])
  }

  @Test func unknownSequencesAndControlsAreDropped() {
    #expect(decode("a\u{1B}[15~b\u{1B}[201~c\u{1B}x\u{00}\u{1C}d") == [.text("a"), .text("b"), .text("c"), .text("d")].merged)
    #expect(decode("\u{1B}[?1;2c") == [])
    // C1 controls typed as UTF-8 never reach the line.
    #expect(decode("a\u{9B}b") == [.text("ab")])
  }

  @Test func invalidUTF8BecomesReplacementCharacter() {
    var decoder = KeyDecoder()
    let keys = decoder.decode([0x61, 0xFF, 0x62])
    #expect(keys == [.text("a\u{FFFD}b")])
  }

  @Test func sequencesSplitAnywhereDecodeTheSame() {
    let input = Array("héllo\u{1B}[1;5D日本\u{1B}[3~\u{1B}b😀x\r\u{1B}[A".utf8)
    var whole = KeyDecoder()
    let expected = whole.decode(input).merged
    for split in 1..<input.count {
      var decoder = KeyDecoder()
      let keys = decoder.decode(input[..<split]) + decoder.decode(input[split...])
      #expect(keys.merged == expected, "split at \(split)")
    }
    var byteByByte = KeyDecoder()
    var oneByOne: [Key] = []
    for byte in input { oneByOne += byteByByte.decode([byte]) }
    #expect(oneByOne.merged == expected)
  }

  @Test func loneEscapeWaitsThenFlushes() {
    var decoder = KeyDecoder()
    let first = decoder.decode([0x1B])
    #expect(first == [])
    #expect(decoder.isWaiting)
    let flushed = decoder.flush()
    #expect(flushed == [.escape])
    #expect(!decoder.isWaiting)
    let next = decoder.decode(Array("b".utf8))
    #expect(next == [.text("b")])
  }

  @Test func incompleteUTF8Waits() {
    var decoder = KeyDecoder()
    let bytes = Array("日".utf8)
    let first = decoder.decode(bytes[..<2])
    #expect(first == [])
    #expect(decoder.isWaiting)
    let rest = decoder.decode(bytes[2...])
    #expect(rest == [.text("日")])
  }

  @Test func runawaySequenceIsDropped() {
    var decoder = KeyDecoder()
    let garbage = [0x1B, UInt8(ascii: "[")] + Array(repeating: UInt8(ascii: "1"), count: 40)
    let dropped = decoder.decode(garbage)
    #expect(dropped == [])
    let next = decoder.decode(Array("ok".utf8))
    #expect(next == [.text("ok")])
  }
}

/// The keys of conversations, the log and the search, and pastes.
@Suite struct KeyDecoderChatKeysTests {
  func decode(_ text: String) -> [Key] {
    var decoder = KeyDecoder()
    return decoder.decode(Array(text.utf8))
  }

  @Test func conversationsAndScrolling() {
    #expect(decode("\u{1B}1\u{1B}2\u{1B}9\u{1B}0") == [.conversation(1), .conversation(2), .conversation(9), .conversation(10)])
    #expect(
      decode("\u{1B}[1;3D\u{1B}[1;3C\u{1B}\u{1B}[D\u{1B}\u{1B}[C") == [
        .previousConversation, .nextConversation, .previousConversation, .nextConversation,
      ])
    #expect(decode("\u{10}\u{0E}") == [.previousConversation, .nextConversation])
    #expect(decode("\u{1B}[5~\u{1B}[6~") == [.pageUp, .pageDown])
    #expect(decode("\u{12}\u{13}\u{07}") == [.searchBackward, .searchForward, .escape])
  }

  @Test func escapeTwiceIsOneEscapeThenAnother() {
    var decoder = KeyDecoder()
    #expect(decoder.decode([0x1B, 0x1B, UInt8(ascii: "x")]) == [.escape])
    #expect(decoder.decode([0x1B]) == [])
    #expect(decoder.flush() == [.escape])
  }

  @Test func bracketedPasteIsOneKeyWithItsNewlines() {
    #expect(decode("a\u{1B}[200~one\r\ntwo\rthree\nfour\u{1B}[201~b") == [.text("a"), .paste("one\ntwo\nthree\nfour"), .text("b")])
    // Controls in a paste do nothing: no Enter, no Ctrl-C, no escape sequence; tabs are spaces.
    #expect(decode("\u{1B}[200~x\u{03}\u{1B}[2Jy\tz\u{1B}[201~") == [.paste("x[2Jy    z")])
  }

  @Test func aPasteSplitAnywhereDecodesTheSame() {
    let input = Array("hi\u{1B}[200~日本\n語 \u{1B}[20x\u{1B}[201~\r".utf8)
    var whole = KeyDecoder()
    let expected = whole.decode(input)
    #expect(expected == [.text("hi"), .paste("日本\n語 [20x"), .enter])
    for split in 1..<input.count {
      var decoder = KeyDecoder()
      let first = decoder.decode(input[..<split])
      // Once the paste started (after byte 8), waiting for its end is not waiting for an
      // escape sequence: no timeout may cut it.
      if split >= 8 { #expect(!decoder.isWaiting, "split at \(split)") }
      let keys = first + decoder.decode(input[split...])
      #expect(keys.merged == expected.merged, "split at \(split)")
    }
  }

  @Test func linesArrivingTogetherAreAPaste() {
    // A terminal without bracketed paste: lines arrive in one read, which typing never does.
    #expect(decode("one\rtwo\tx\rthree\r") == [.paste("one\ntwo    x\nthree\n")])
    #expect(decode("\u{1B}[Done\rtwo") == [.left, .paste("one\ntwo")])
    // Typed: one line and Enter.
    #expect(decode("hello\r") == [.text("hello"), .enter])
    #expect(decode("\r\r") == [.enter, .enter])
  }
}

extension [Key] {
  /// Adjacent text keys joined (how text is split into keys does not matter).
  var merged: [Key] {
    var result: [Key] = []
    for key in self {
      if case .text(let text) = key, case .text(let previous)? = result.last {
        result[result.count - 1] = .text(previous + text)
      } else {
        result.append(key)
      }
    }
    return result
  }
}
