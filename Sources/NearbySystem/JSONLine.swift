/// A tiny JSON writer with a stable key order, for one-object-per-line output.
public enum JSONValue: Sendable, Equatable {
  case string(String)
  case number(Int64)
  case unsigned(UInt64)
  case bool(Bool)
  case null
  case array([JSONValue])
  case object([(String, JSONValue)])

  public static func == (lhs: JSONValue, rhs: JSONValue) -> Bool { lhs.encoded == rhs.encoded }

  /// The compact JSON text.
  public var encoded: String {
    var out = ""
    write(into: &out)
    return out
  }

  private func write(into out: inout String) {
    switch self {
    case .string(let text): Self.writeString(text, into: &out)
    case .number(let value): out += String(value)
    case .unsigned(let value): out += String(value)
    case .bool(let value): out += value ? "true" : "false"
    case .null: out += "null"
    case .array(let values):
      out += "["
      for (index, value) in values.enumerated() {
        if index > 0 { out += "," }
        value.write(into: &out)
      }
      out += "]"
    case .object(let members):
      out += "{"
      for (index, (key, value)) in members.enumerated() {
        if index > 0 { out += "," }
        Self.writeString(key, into: &out)
        out += ":"
        value.write(into: &out)
      }
      out += "}"
    }
  }

  static func writeString(_ text: String, into out: inout String) {
    out += "\""
    // Byte by byte, copying the runs that need no escape at once (appending scalar by
    // scalar made a 1 MiB message in a chat's JSON events take tens of milliseconds). Runs
    // end only before an ASCII byte or the first byte of a sequence, so each holds whole
    // characters.
    let written: Bool? = text.utf8.withContiguousStorageIfAvailable { bytes in
      var start = 0
      var index = 0
      while index < bytes.count {
        let byte = bytes[index]
        if byte >= 0x20, byte < 0x7F, byte != 0x22, byte != 0x5C {  // most bytes: printable ASCII
          index += 1
          continue
        }
        let (escape, width) = escaped(bytes, at: index)
        guard let escape else {
          index += 1
          continue
        }
        if index > start { out += String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self) }
        out += escape
        index += width
        start = index
      }
      if bytes.count > start { out += String(decoding: UnsafeBufferPointer(rebasing: bytes[start...]), as: UTF8.self) }
      return true
    }
    if written == nil {
      for scalar in text.unicodeScalars {
        if let escape = escaped(scalar) { out += escape } else { out.unicodeScalars.append(scalar) }
      }
    }
    out += "\""
  }

  /// How `scalar` is written inside a JSON string, when not as itself: quotes, backslashes,
  /// control characters (C0, DEL, C1) and the line and paragraph separators (which some
  /// JavaScript parsers take for line ends).
  package static func escaped(_ scalar: Unicode.Scalar) -> String? {
    switch scalar {
    case "\"": "\\\""
    case "\\": "\\\\"
    case "\n": "\\n"
    case "\r": "\\r"
    case "\t": "\\t"
    case _ where scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value) || scalar.value == 0x2028 || scalar.value == 0x2029:
      {
        let hex = String(scalar.value, radix: 16)
        return "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
      }()
    default: nil
    }
  }

  /// ``escaped(_:)`` for the character whose UTF-8 starts at `index`, and how many bytes it
  /// takes; only the escaped characters are decoded (U+0080–U+009F are C2 80–C2 9F, U+2028
  /// and U+2029 are E2 80 A8 and E2 80 A9).
  private static func escaped(_ bytes: UnsafeBufferPointer<UInt8>, at index: Int) -> (String?, Int) {
    let byte = bytes[index]
    if byte < 0x80 { return (byte >= 0x20 && byte != 0x22 && byte != 0x5C && byte != 0x7F) ? (nil, 1) : (escaped(Unicode.Scalar(byte)), 1) }
    if byte == 0xC2, index + 1 < bytes.count, (0x80...0x9F).contains(bytes[index + 1]) {
      return (escaped(Unicode.Scalar(bytes[index + 1])), 2)
    }
    if byte == 0xE2, index + 2 < bytes.count, bytes[index + 1] == 0x80, bytes[index + 2] == 0xA8 || bytes[index + 2] == 0xA9 {
      return (escaped(Unicode.Scalar(bytes[index + 2] == 0xA8 ? 0x2028 : 0x2029)!), 3)
    }
    return (nil, 1)
  }
}
