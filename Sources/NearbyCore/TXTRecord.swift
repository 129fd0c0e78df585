/// Encoding and parsing of a DNS TXT record: a sequence of character-strings, each one
/// length byte followed by up to 255 bytes (RFC 1035 section 3.3.14, RFC 6763 section 6).
package enum TXTRecord {
  /// Encodes `strings` as DNS character-strings.
  /// - Precondition: every string is at most 255 bytes (``DiscoveryInfo`` checks this).
  package static func encode(_ strings: [[UInt8]]) -> [UInt8] {
    var result = [UInt8]()
    result.reserveCapacity(strings.reduce(0) { $0 + 1 + $1.count })
    for string in strings {
      precondition(string.count <= 255, "a TXT character-string holds at most 255 bytes")
      result.append(UInt8(string.count))
      result.append(contentsOf: string)
    }
    return result
  }

  /// Splits raw TXT rdata into its character-strings.
  /// - Returns: `nil` if a length byte runs past the end.
  package static func parse(_ rdata: some Collection<UInt8>) -> [[UInt8]]? {
    let bytes = Array(rdata)
    var result = [[UInt8]]()
    var index = 0
    while index < bytes.count {
      let length = Int(bytes[index])
      index += 1
      guard index + length <= bytes.count else { return nil }
      if length > 0 { result.append(Array(bytes[index..<index + length])) }
      index += length
    }
    return result
  }

  /// Splits `key=value` (a string without `=` is a key with no value, RFC 6763 6.4).
  package static func keyValue(_ string: [UInt8]) -> (key: [UInt8], value: [UInt8]?) {
    guard let equals = string.firstIndex(of: UInt8(ascii: "=")) else { return (string, nil) }
    return (Array(string[..<equals]), Array(string[(equals + 1)...]))
  }
}
