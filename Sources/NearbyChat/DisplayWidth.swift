/// How many terminal columns text takes.
///
/// East Asian Wide and Fullwidth characters and emoji take two columns, combining marks and
/// other zero-width characters none, everything else one. A grapheme cluster (a `Character`)
/// is as wide as its first visible scalar, or two columns when it asks for emoji
/// presentation (U+FE0F), which is what terminals that follow Unicode do.
public enum DisplayWidth {
  /// The columns of one grapheme cluster.
  public static func of(_ character: Character) -> Int {
    if let ascii = character.asciiValue { return ascii < 0x20 || ascii == 0x7F ? 0 : 1 }  // the common case, fast
    var width: Int?
    for scalar in character.unicodeScalars {
      if scalar.value == 0xFE0F, width != nil { return 2 }
      if width == nil {
        let scalarWidth = of(scalar)
        if scalarWidth > 0 { width = scalarWidth }
      }
    }
    return width ?? 0
  }

  /// The columns of a string: the sum of its grapheme clusters.
  public static func of(_ text: some StringProtocol) -> Int {
    var total = 0
    for character in text { total += of(character) }
    return total
  }

  /// The columns of one scalar on its own: 0, 1 or 2.
  public static func of(_ scalar: Unicode.Scalar) -> Int {
    let value = scalar.value
    if value < 0x7F { return value < 0x20 ? 0 : 1 }
    if value <= 0x9F { return 0 }  // DEL and C1 controls: never printed as such
    if isZeroWidth(scalar) { return 0 }
    if scalar.properties.isEmojiPresentation || isWide(value) { return 2 }
    return 1
  }

  static func isZeroWidth(_ scalar: Unicode.Scalar) -> Bool {
    switch scalar.properties.generalCategory {
    case .nonspacingMark, .enclosingMark: return true
    case .format: return scalar.value != 0x00AD  // the soft hyphen shows as a hyphen
    default: break
    }
    // Hangul medial vowels and final consonants join the preceding initial consonant.
    return (0x1160...0x11FF).contains(scalar.value) || scalar.value == 0x200B
  }

  /// East Asian Wide (W) and Fullwidth (F) blocks, apart from emoji, which
  /// `isEmojiPresentation` covers.
  static func isWide(_ value: UInt32) -> Bool {
    if value < 0x1100 { return false }
    for range in wideRanges where range.contains(value) { return true }
    return false
  }

  private static let wideRanges: [ClosedRange<UInt32>] = [
    0x1100...0x115F, 0x2329...0x232A, 0x2E80...0x303E, 0x3041...0x3247, 0x3250...0x4DBF, 0x4E00...0xA4CF,
    0xA960...0xA97F, 0xAC00...0xD7A3, 0xF900...0xFAFF, 0xFE10...0xFE19, 0xFE30...0xFE6F, 0xFF00...0xFF60,
    0xFFE0...0xFFE6, 0x16FE0...0x16FE4, 0x16FF0...0x16FF1, 0x17000...0x18CFF, 0x18D00...0x18D08,
    0x1AFF0...0x1B2FF, 0x1F200...0x1F2FF, 0x20000...0x2FFFD, 0x30000...0x3FFFD,
  ]
}
