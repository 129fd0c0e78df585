/// A peer's display name: 1–63 bytes of UTF-8 without control characters or other hidden
/// characters (``HiddenCharacters``).
///
/// The limit is the one of DNS-SD instance names (and of MultipeerConnectivity). Control
/// characters are refused because names are printed on other people's terminals; format
/// characters (bidirectional controls, zero-width characters) because they let one name
/// look like another ("bo\u{202E}b") or rearrange the text around it.
public struct DisplayName: Hashable, Sendable, CustomStringConvertible {
  /// The most UTF-8 bytes a display name may have.
  public static let maximumByteCount = 63

  /// The validated text.
  public let value: String

  /// Validates `text` as a display name.
  /// - Throws: ``DisplayNameError`` naming the rule that failed and how to fix it.
  public init(_ text: String) throws(DisplayNameError) {
    let count = text.utf8.count
    if count == 0 { throw .empty }
    if count > Self.maximumByteCount { throw .tooLong(byteCount: count) }
    if let scalar = HiddenCharacters.first(in: text) {
      throw HiddenCharacters.isControl(scalar) ? .controlCharacter(scalar.value) : .hiddenCharacter(scalar.value)
    }
    value = text
  }

  /// Validates raw UTF-8 bytes from the wire or a TXT record.
  public init(utf8 bytes: some Collection<UInt8>) throws(DisplayNameError) {
    guard let text = String(validating: bytes, as: UTF8.self) else { throw .invalidUTF8 }
    try self.init(text)
  }

  public var description: String { value }
}

/// Why a display name was refused.
public enum DisplayNameError: Error, Hashable, Sendable, CustomStringConvertible {
  case empty
  case tooLong(byteCount: Int)
  case controlCharacter(UInt32)
  /// A format character (a bidirectional control, a zero-width character, ...), a line
  /// separator or an invisible filler: see ``HiddenCharacters``.
  case hiddenCharacter(UInt32)
  case invalidUTF8

  public var description: String {
    switch self {
    case .empty:
      return "the display name is empty: give a name of 1 to 63 bytes, for example alice"
    case .tooLong(let count):
      return
        "the display name is \(count) bytes of UTF-8, more than the limit of 63: choose a shorter name"
    case .controlCharacter(let value):
      let hex = String(value, radix: 16, uppercase: true)
      return
        "the display name contains the control character U+\(String(repeating: "0", count: max(0, 4 - hex.count)))\(hex): use printable characters only"
    case .hiddenCharacter(let value):
      let scalar = Unicode.Scalar(value).map(HiddenCharacters.describe) ?? "U+\(String(value, radix: 16, uppercase: true))"
      return
        "the display name contains \(scalar), an invisible character that can reorder the text around it or make the name look like another: use visible characters only"
    case .invalidUTF8:
      return "the display name is not valid UTF-8"
    }
  }
}
