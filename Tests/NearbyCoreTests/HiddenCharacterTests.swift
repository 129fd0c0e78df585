import NearbyCore
import Testing

/// Names with characters that hide or rearrange text are refused wherever a name arrives
/// (our own --name, a TXT record, a HELLO), with a reason that names the character.
@Suite("Hidden characters in names")
struct HiddenCharacterTests {
  static let hidden: [(String, UInt32)] = [
    ("bo\u{202E}b", 0x202E),  // RIGHT-TO-LEFT OVERRIDE
    ("\u{2066}alice\u{2069}", 0x2066),  // LEFT-TO-RIGHT ISOLATE
    ("al\u{2067}ice", 0x2067),
    ("al\u{2068}ice", 0x2068),
    ("alice\u{2069}", 0x2069),
    ("bo\u{200B}b", 0x200B),  // ZERO WIDTH SPACE
    ("bo\u{200C}b", 0x200C),  // ZERO WIDTH NON-JOINER
    ("bo\u{200D}b", 0x200D),  // a joiner between letters
    ("\u{FEFF}bob", 0xFEFF),  // ZERO WIDTH NO-BREAK SPACE
    ("bo\u{00AD}b", 0x00AD),  // SOFT HYPHEN
    ("bob\u{200F}", 0x200F),  // RIGHT-TO-LEFT MARK
    ("bob\u{E0041}", 0xE0041),  // a tag character
    ("a\u{2028}b", 0x2028),  // LINE SEPARATOR
    ("a\u{2029}b", 0x2029),
    ("\u{3164}", 0x3164),  // HANGUL FILLER: a blank letter
  ]

  @Test("hidden characters make a name invalid", arguments: hidden)
  func refused(_ name: String, _ value: UInt32) {
    #expect(throws: DisplayNameError.hiddenCharacter(value)) { try DisplayName(name) }
    let description = DisplayNameError.hiddenCharacter(value).description
    let hex = String(value, radix: 16, uppercase: true)
    #expect(description.contains("U+" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex))
    #expect(description.contains("use visible characters only"))
  }

  @Test func theReasonNamesTheCharacter() {
    #expect(DisplayNameError.hiddenCharacter(0x202E).description.contains("U+202E RIGHT-TO-LEFT OVERRIDE"))
    #expect(DisplayNameError.hiddenCharacter(0xAD).description.contains("U+00AD SOFT HYPHEN"))
  }

  @Test(
    "emoji sequences, variation selectors and scripts stay valid",
    arguments: ["👩‍💻 ada", "❤️", "🏳️‍🌈", "👍🏽", "👨‍👩‍👧‍👦", "שלום", "مرحبا", "日本語", "Zoë", "bоb"])
  func accepted(_ name: String) throws {
    #expect(try DisplayName(name).value == name)
  }

  @Test func controlCharactersStayControlCharacters() {
    #expect(throws: DisplayNameError.controlCharacter(0x1B)) { try DisplayName("\u{1B}[2J") }
  }

  @Test func aTXTRecordWithAHiddenCharacterInItsNameIsNotAPeer() {
    let record = TXTRecord.encode(["id=0000000000000000000000000000000a", "name=bo\u{202E}b", "v=2"].map { Array($0.utf8) })
    #expect(PeerAdvertisement.parse(txt: record) == .failure(.invalidName(.hiddenCharacter(0x202E))))
    #expect(AdvertisementError.invalidName(.hiddenCharacter(0x202E)).description.contains("RIGHT-TO-LEFT OVERRIDE"))
  }

  @Test func aHELLOWithAHiddenCharacterInItsNameIsInvalid() throws {
    var payload = FrameEncoder.encode(.hello(Frame.Hello(peer: Peer(id: PeerID(high: 1, low: 2), name: try DisplayName("xxxxxxx")))))
    payload.replaceSubrange((payload.count - 7)..., with: Array("bo\u{2066}bb".utf8))
    let decoder = FrameDecoder()
    decoder.append(payload)
    do {
      let frame = try decoder.next()
      Issue.record("decoded \(String(describing: frame))")
    } catch {
      guard case .invalidHello(let reason) = error else {
        Issue.record("not invalidHello: \(error)")
        return
      }
      #expect(reason.contains("U+2066 LEFT-TO-RIGHT ISOLATE"))
    }
  }

  /// What ``HiddenCharacters/first(in:)`` must find: each scalar asked in its context.
  static func firstByScalars(_ text: String) -> Unicode.Scalar? {
    let scalars = Array(text.unicodeScalars)
    for (index, scalar) in scalars.enumerated()
    where HiddenCharacters.isHidden(
      scalar, after: index > 0 ? scalars[index - 1] : nil, before: index + 1 < scalars.count ? scalars[index + 1] : nil)
    {
      return scalar
    }
    return nil
  }

  /// The bytes are looked at eight at a time: every ASCII byte, and some longer characters,
  /// at every position of texts of up to 19 scalars agree with the scalar-by-scalar answer.
  @Test(arguments: Array(0..<20))
  func anyCharacterAtAnyPositionIsFoundAsScalarByScalar(length: Int) {
    let others: [Unicode.Scalar] = ["é", "\u{202E}", "\u{200D}", "💻", "\u{3164}", "\u{FE0F}"]
    let candidates = (0..<128).map { Unicode.Scalar(UInt8($0)) } + others
    for position in 0..<max(length, 1) {
      for candidate in candidates {
        var scalars = String.UnicodeScalarView(repeating: "x", count: length)
        if length > 0 {
          let index = scalars.index(scalars.startIndex, offsetBy: position)
          scalars.replaceSubrange(index...index, with: [candidate])
        }
        let text = String(scalars)
        #expect(HiddenCharacters.first(in: text) == Self.firstByScalars(text), "\(candidate.value) at \(position) of \(length)")
      }
    }
  }

  @Test func firstFindsTheFirstHiddenCharacterInContext() {
    #expect(HiddenCharacters.first(in: "plain text") == nil)
    #expect(HiddenCharacters.first(in: "👩‍💻") == nil)
    #expect(HiddenCharacters.first(in: "a\u{200D}💻") == "\u{200D}")
    #expect(HiddenCharacters.first(in: "💻\u{200D}") == "\u{200D}")
    #expect(HiddenCharacters.first(in: "x\u{202A}y\u{202C}") == "\u{202A}")
  }
}
