/// The application's discovery info: ordered `key=value` pairs published in the TXT record.
///
/// Rules (PROTOCOL.md section 1.3): keys are 1–63 bytes of printable ASCII without `=`,
/// unique ignoring case, and not one of the reserved keys; values are UTF-8; each
/// `key=value` is at most 255 bytes. The size of the whole TXT record is checked by
/// ``PeerAdvertisement``.
public struct DiscoveryInfo: Hashable, Sendable, Sequence {
  /// One pair.
  public struct Entry: Hashable, Sendable {
    public let key: String
    public let value: String
  }

  /// Keys the protocol itself uses.
  public static let reservedKeys: Set<String> = ["id", "name", "v", "relay"]
  /// The most bytes one `key=value` string may have.
  public static let maximumEntryBytes = 255

  public private(set) var entries: [Entry]

  /// No discovery info.
  public init() { entries = [] }

  /// Validates `pairs`, keeping their order.
  /// - Throws: ``DiscoveryInfoError`` for the first pair that breaks a rule.
  public init(_ pairs: [(key: String, value: String)]) throws(DiscoveryInfoError) {
    entries = []
    for pair in pairs { try set(pair.key, to: pair.value) }
  }

  /// Parses entries written `key=value` (as DNS-SD shows TXT entries; the value may hold `=`).
  public init(arguments: [String]) throws(DiscoveryInfoError) {
    entries = []
    for argument in arguments {
      guard let equals = argument.firstIndex(of: "=") else { throw .missingEquals(argument) }
      try set(String(argument[..<equals]), to: String(argument[argument.index(after: equals)...]))
    }
  }

  /// Adds or replaces the value for `key`.
  public mutating func set(_ key: String, to value: String) throws(DiscoveryInfoError) {
    try Self.validate(key: key, value: value, allowReserved: false)
    let lowered = key.lowercased()
    if let index = entries.firstIndex(where: { $0.key.lowercased() == lowered }) {
      entries[index] = Entry(key: key, value: value)
    } else {
      entries.append(Entry(key: key, value: value))
    }
  }

  /// The value for `key`, ignoring case.
  public subscript(key: String) -> String? {
    let lowered = key.lowercased()
    return entries.first(where: { $0.key.lowercased() == lowered })?.value
  }

  public var isEmpty: Bool { entries.isEmpty }
  public var count: Int { entries.count }
  public func makeIterator() -> IndexingIterator<[Entry]> { entries.makeIterator() }

  static func validate(key: String, value: String, allowReserved: Bool) throws(DiscoveryInfoError) {
    let keyBytes = Array(key.utf8)
    if keyBytes.isEmpty { throw .emptyKey }
    if keyBytes.count > 63 { throw .keyTooLong(key) }
    for byte in keyBytes where byte < 0x20 || byte > 0x7E || byte == UInt8(ascii: "=") {
      throw .invalidKey(key)
    }
    if !allowReserved && reservedKeys.contains(key.lowercased()) { throw .reservedKey(key) }
    let total = keyBytes.count + 1 + value.utf8.count
    if total > maximumEntryBytes { throw .entryTooLong(key, byteCount: total) }
  }

  /// Builds info from TXT strings that passed ``validate``-level parsing, without the
  /// reserved-key check (used when parsing other peers' records).
  init(unchecked entries: [Entry]) { self.entries = entries }
}

/// Why discovery info was refused.
public enum DiscoveryInfoError: Error, Equatable, Sendable, CustomStringConvertible {
  case missingEquals(String)
  case emptyKey
  case keyTooLong(String)
  case invalidKey(String)
  case reservedKey(String)
  case entryTooLong(String, byteCount: Int)
  case recordTooLong(byteCount: Int)

  public var description: String {
    switch self {
    case .missingEquals(let argument):
      return "discovery info '\(argument)' has no '=': write key=value, for example room=kitchen"
    case .emptyKey:
      return "a discovery info key is empty: write key=value with a key of 1-63 characters"
    case .keyTooLong(let key):
      return "the discovery info key '\(key.prefix(20))...' is longer than 63 bytes: use a shorter key"
    case .invalidKey(let key):
      return
        "the discovery info key '\(key)' has a character other than printable ASCII (no '='): use letters, digits and punctuation"
    case .reservedKey(let key):
      return
        "the discovery info key '\(key)' is reserved by the protocol (id, name, v, relay): choose another key"
    case .entryTooLong(let key, let count):
      return
        "the discovery info entry '\(key)=...' is \(count) bytes, more than 255: shorten its value"
    case .recordTooLong(let count):
      return
        "the TXT record would be \(count) bytes, more than the limit of 1300: publish less discovery info"
    }
  }
}
