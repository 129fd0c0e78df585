/// A peer's display name: 1–63 bytes of UTF-8 without control characters.
///
/// The limit is the one of DNS-SD instance names (and of MultipeerConnectivity). Control
/// characters are refused because names are printed on other people's terminals.
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
    if let scalar = text.unicodeScalars.first(where: Self.isControl) {
      throw .controlCharacter(scalar.value)
    }
    value = text
  }

  /// Validates raw UTF-8 bytes from the wire or a TXT record.
  public init(utf8 bytes: some Collection<UInt8>) throws(DisplayNameError) {
    guard let text = String(validating: bytes, as: UTF8.self) else { throw .invalidUTF8 }
    try self.init(text)
  }

  public var description: String { value }

  static func isControl(_ scalar: Unicode.Scalar) -> Bool {
    scalar.value < 0x20 || (scalar.value >= 0x7F && scalar.value <= 0x9F)
  }
}

/// Why a display name was refused.
public enum DisplayNameError: Error, Hashable, Sendable, CustomStringConvertible {
  case empty
  case tooLong(byteCount: Int)
  case controlCharacter(UInt32)
  case invalidUTF8

  public var description: String {
    switch self {
    case .empty:
      return "the display name is empty: give a name of 1 to 63 bytes, for example --name alice"
    case .tooLong(let count):
      return
        "the display name is \(count) bytes of UTF-8, more than the limit of 63: choose a shorter name"
    case .controlCharacter(let value):
      let hex = String(value, radix: 16, uppercase: true)
      return
        "the display name contains the control character U+\(String(repeating: "0", count: max(0, 4 - hex.count)))\(hex): use printable characters only"
    case .invalidUTF8:
      return "the display name is not valid UTF-8"
    }
  }
}
