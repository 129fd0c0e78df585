extension [UInt8] {
  /// Appends an integer in network byte order.
  mutating func append<T: FixedWidthInteger>(bigEndian value: T) {
    Swift.withUnsafeBytes(of: value.bigEndian) { append(contentsOf: $0) }
  }

  /// Reads an integer in network byte order at `offset` (the caller checked the length).
  func bigEndian<T: FixedWidthInteger>(at offset: Int, as _: T.Type = T.self) -> T {
    var value: T = 0
    for index in offset..<offset + MemoryLayout<T>.size { value = value << 8 | T(self[index]) }
    return value
  }

  /// Lowercase hexadecimal, for the key file, test vectors and messages.
  package var hexString: String {
    let digits = Array("0123456789abcdef".utf8)
    var text = [UInt8]()
    text.reserveCapacity(count * 2)
    for byte in self {
      text.append(digits[Int(byte >> 4)])
      text.append(digits[Int(byte & 0xF)])
    }
    return String(decoding: text, as: UTF8.self)
  }

  /// Parses hexadecimal digits (either case); `nil` for an odd count or another character.
  package init?(hexString text: some StringProtocol) {
    let utf8 = Array(text.utf8)
    guard utf8.count % 2 == 0 else { return nil }
    var bytes = [UInt8]()
    bytes.reserveCapacity(utf8.count / 2)
    var index = 0
    while index < utf8.count {
      guard let high = Self.nibble(utf8[index]), let low = Self.nibble(utf8[index + 1]) else { return nil }
      bytes.append(high << 4 | low)
      index += 2
    }
    self = bytes
  }

  private static func nibble(_ byte: UInt8) -> UInt8? {
    switch byte {
    case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
    case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
    case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
    default: nil
    }
  }
}
