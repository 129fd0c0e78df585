/// Characters that hide, move or rearrange text on a screen (PROTOCOL.md section 2.3): they
/// have no place in a display name, and front ends show them escaped in a peer's text.
///
/// They are the control characters (general category Cc), the format characters (Cf: the
/// bidirectional controls such as U+202E RIGHT-TO-LEFT OVERRIDE and U+2066–U+2069, the
/// zero-width space and joiners, the soft hyphen, tags, ...), the line and paragraph
/// separators (Zl, Zp), and the other default-ignorable code points (invisible fillers such
/// as U+3164 HANGUL FILLER), except:
///
/// - the variation selectors U+FE00–U+FE0F and U+E0100–U+E01EF, which choose how the
///   character before them looks (`❤️` is U+2764 U+FE0F);
/// - U+200D ZERO WIDTH JOINER between two emoji (characters with the Unicode property
///   Emoji outside ASCII, a variation selector or skin tone allowed after the first), where
///   it joins them into one picture (`👩‍💻`).
public enum HiddenCharacters {
  /// Whether `scalar` is hidden where it stands, between `previous` and `next`.
  public static func isHidden(_ scalar: Unicode.Scalar, after previous: Unicode.Scalar?, before next: Unicode.Scalar?) -> Bool {
    let value = scalar.value
    if value < 0x20 || (0x7F...0x9F).contains(value) { return true }
    // Everything below is above U+00AC: plain text stays on the fast path.
    if value < 0xAD { return false }
    if isVariationSelector(value) { return false }
    let properties = scalar.properties
    switch properties.generalCategory {
    case .format:
      if value == 0x200D, let previous, let next { return !(joinsAfter(previous) && isPictograph(next)) }
      return true
    case .lineSeparator, .paragraphSeparator:
      return true
    default:
      return properties.isDefaultIgnorableCodePoint
    }
  }

  /// The first hidden character of `text`, if any.
  public static func first(in text: String) -> Unicode.Scalar? {
    // Printable ASCII is never hidden, and most text is nothing else: its bytes settle it
    // eight at a time (a flooded chat spent most of its time looking at each scalar's
    // Unicode properties here).
    if text.utf8.withContiguousStorageIfAvailable({ isPrintableASCII(UnsafeRawBufferPointer($0)) }) == true { return nil }
    var previous: Unicode.Scalar?
    var iterator = text.unicodeScalars.makeIterator()
    var current = iterator.next()
    while let scalar = current {
      let next = iterator.next()
      if isHidden(scalar, after: previous, before: next) { return scalar }
      previous = scalar
      current = next
    }
    return nil
  }

  /// Whether every byte is printable ASCII (0x20–0x7E): none is a control character, DEL
  /// or part of a longer UTF-8 sequence.
  static func isPrintableASCII(_ bytes: UnsafeRawBufferPointer) -> Bool {
    let ones: UInt64 = 0x0101_0101_0101_0101
    let highs: UInt64 = 0x8080_8080_8080_8080
    var index = 0
    while index + 8 <= bytes.count {
      let word = bytes.loadUnaligned(fromByteOffset: index, as: UInt64.self)
      // A byte at or above 0x80; a byte below 0x20; a byte equal to 0x7F (the usual
      // "has a byte less than n" and "has a zero byte" tests, per byte of the word).
      let below = (word &- ones &* 0x20) & ~word & highs
      let delete = ((word ^ (ones &* 0x7F)) &- ones) & ~(word ^ (ones &* 0x7F)) & highs
      if (word & highs) | below | delete != 0 { return false }
      index += 8
    }
    while index < bytes.count {
      guard (0x20..<0x7F).contains(bytes[index]) else { return false }
      index += 1
    }
    return true
  }

  /// `U+202E RIGHT-TO-LEFT OVERRIDE`: the code point and its Unicode name, for messages.
  public static func describe(_ scalar: Unicode.Scalar) -> String {
    let hex = String(scalar.value, radix: 16, uppercase: true)
    let code = "U+" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex
    guard let name = scalar.properties.name ?? scalar.properties.nameAlias else { return code }
    return "\(code) \(name)"
  }

  static func isControl(_ scalar: Unicode.Scalar) -> Bool {
    scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value)
  }

  private static func isVariationSelector(_ value: UInt32) -> Bool {
    (0xFE00...0xFE0F).contains(value) || (0xE0100...0xE01EF).contains(value)
  }

  private static func isPictograph(_ scalar: Unicode.Scalar) -> Bool {
    scalar.value >= 0x80 && scalar.properties.isEmoji
  }

  /// What may stand before a joiner inside an emoji sequence: an emoji, or the variation
  /// selector or skin tone that ends one.
  private static func joinsAfter(_ scalar: Unicode.Scalar) -> Bool {
    isVariationSelector(scalar.value) || isPictograph(scalar)
  }
}
