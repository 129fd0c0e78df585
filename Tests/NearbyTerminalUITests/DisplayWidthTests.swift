import NearbyChat
import NearbyTerminalUI
import Testing

@Suite struct DisplayWidthTests {
  @Test func asciiAndLatin() {
    #expect(DisplayWidth.of("hello") == 5)
    #expect(DisplayWidth.of("héllo") == 5)
    #expect(DisplayWidth.of("e\u{301}") == 1)
  }

  @Test func eastAsianWideAndFullwidth() {
    #expect(DisplayWidth.of("日本語") == 6)
    #expect(DisplayWidth.of("한국") == 4)
    #expect(DisplayWidth.of("ｈｉ") == 4)
    #expect(DisplayWidth.of("かな") == 4)
    #expect(DisplayWidth.of("\u{3000}") == 2)
  }

  @Test func emoji() {
    #expect(DisplayWidth.of("😀") == 2)
    #expect(DisplayWidth.of("👍🏽") == 2)
    #expect(DisplayWidth.of("👨‍👩‍👧") == 2)
    #expect(DisplayWidth.of("🇩🇪") == 2)
    #expect(DisplayWidth.of("❤️") == 2)
    #expect(DisplayWidth.of("❤") == 1)
  }

  @Test func zeroWidth() {
    #expect(DisplayWidth.of(Character("\u{301}")) == 0)
    #expect(DisplayWidth.of("a\u{200B}b") == 2)
    #expect(DisplayWidth.of(Unicode.Scalar(0x07)) == 0)
    #expect(DisplayWidth.of(Unicode.Scalar(0x9B)) == 0)
  }

  @Test func symbolsTheChatUses() {
    #expect(DisplayWidth.of("✓✗—") == 3)
  }
}
