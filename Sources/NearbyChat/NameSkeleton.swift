/// What a name looks like, for telling whether two names can be mistaken for each other:
/// a small version of the *skeleton* of Unicode Technical Standard #39 (section 4), for the
/// homoglyphs that matter most between Latin, Cyrillic and Greek names.
///
/// Each character that looks like a Latin letter or digit becomes that letter (Cyrillic
/// `о` and Greek `ο` become `o`, Cyrillic `В` becomes `B`, fullwidth `ａ` becomes `a`); `I`,
/// `1` and `|` become `l`, `0` becomes `O`; then `rn` becomes `m` and `vv` becomes `w`.
/// Case is kept (`В` and `в` differ in shape): ``key(_:)`` folds it afterwards. Two names
/// with the same key look alike. A false match only costs showing the peers' ids.
public enum NameSkeleton {
  /// The skeleton of `name`.
  public static func of(_ name: String) -> String {
    var out = String.UnicodeScalarView()
    for scalar in name.unicodeScalars {
      let value = scalar.value
      if let latin = table[value] {
        out.append(contentsOf: latin.unicodeScalars)
      } else if (0xFF01...0xFF5E).contains(value) {
        out.append(Unicode.Scalar(value - 0xFF01 + 0x21)!)  // fullwidth ASCII
      } else if (0x1D400...0x1D6A3).contains(value) {
        out.append(mathematicalLetter(value))
      } else if (0x1D7CE...0x1D7FF).contains(value) {
        out.append(Unicode.Scalar(0x30 + (value - 0x1D7CE) % 10)!)  // mathematical digits
      } else if scalar.properties.generalCategory == .spaceSeparator {
        out.append(" ")
      } else {
        out.append(scalar)
      }
    }
    var text = String(out)
    for (digraph, letter) in digraphs where text.contains(digraph) { text = text.replacing(digraph, with: letter) }
    return text
  }

  /// The key names are compared by: the skeleton, ignoring case.
  public static func key(_ name: String) -> String { of(name).lowercased() }

  /// The mathematical alphanumeric letters (bold, italic, script, ...): 52-letter blocks of
  /// A–Z and a–z from U+1D400.
  private static func mathematicalLetter(_ value: UInt32) -> Unicode.Scalar {
    let index = (value - 0x1D400) % 52
    return Unicode.Scalar(index < 26 ? 0x41 + index : 0x61 + index - 26)!
  }

  private static let digraphs: [(String, String)] = [("rn", "m"), ("vv", "w")]

  /// Single characters and the Latin text they look like.
  private static let table: [UInt32: String] = {
    var table: [UInt32: String] = [:]
    func map(_ latin: String, _ lookalikes: String) {
      for scalar in lookalikes.unicodeScalars { table[scalar.value] = latin }
    }
    // Within Latin and digits.
    map("l", "I1|ǀ\u{0399}\u{0406}\u{04C0}\u{2160}\u{217C}\u{2223}ℓ")
    map("O", "0\u{039F}\u{041E}\u{0555}\u{2C9E}")
    map("i", "ı\u{0456}\u{03B9}\u{2170}")
    // Cyrillic capitals.
    map("A", "\u{0410}")
    map("B", "\u{0412}\u{0392}")
    map("C", "\u{0421}\u{03F9}\u{216D}")
    map("E", "\u{0415}\u{0395}")
    map("H", "\u{041D}\u{0397}")
    map("J", "\u{0408}")
    map("K", "\u{041A}\u{039A}\u{212A}")
    map("M", "\u{041C}\u{039C}\u{216F}")
    map("N", "\u{039D}")
    map("P", "\u{0420}\u{03A1}")
    map("S", "\u{0405}")
    map("T", "\u{0422}\u{03A4}")
    map("X", "\u{0425}\u{03A7}\u{2169}")
    map("Y", "\u{04AE}\u{03A5}")
    map("Z", "\u{0396}")
    map("V", "\u{2164}\u{0474}")
    // Small letters.
    map("a", "\u{0430}\u{03B1}\u{0251}")
    map("b", "\u{042C}\u{044C}")
    map("c", "\u{0441}\u{03F2}\u{217D}")
    map("d", "\u{0501}\u{217E}")
    map("e", "\u{0435}\u{0454}")
    map("g", "\u{0261}")
    map("h", "\u{04BB}")
    map("j", "\u{0458}\u{03F3}")
    map("k", "\u{03BA}")
    map("m", "\u{217F}")
    map("n", "\u{03B7}\u{043F}")
    map("o", "\u{043E}\u{03BF}\u{03C3}\u{0585}")
    map("p", "\u{0440}\u{03C1}")
    map("q", "\u{051B}")
    map("r", "\u{0433}")
    map("s", "\u{0455}")
    map("u", "\u{03C5}\u{03BC}")
    map("v", "\u{03BD}\u{0475}\u{2174}")
    map("w", "\u{051D}\u{03C9}")
    map("x", "\u{0445}\u{03C7}\u{2179}")
    map("y", "\u{0443}\u{03B3}")
    return table
  }()
}
