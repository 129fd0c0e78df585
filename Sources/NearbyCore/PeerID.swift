/// The stable identity of a peer: 128 random bits, written as 32 lowercase hex digits.
///
/// A peer is its id, never its display name or DNS-SD instance name: names collide and the
/// mDNS responder renames them. Ids compare as unsigned 128-bit big-endian numbers, which is
/// the order the crossing-invitation tie-break of the protocol uses.
public struct PeerID: Hashable, Sendable, Comparable, CustomStringConvertible {
  /// The most significant 64 bits.
  public let high: UInt64
  /// The least significant 64 bits.
  public let low: UInt64

  /// Creates an id from its two halves. The all-zero id is invalid on the wire; use
  /// ``isValid`` or the failable initialisers to check.
  public init(high: UInt64, low: UInt64) {
    self.high = high
    self.low = low
  }

  /// A fresh random id.
  package static func random() -> PeerID {
    var generator = SystemRandomNumberGenerator()
    return random(using: &generator)
  }

  /// A random id drawn from `generator` (tests pass a seeded one).
  package static func random<G: RandomNumberGenerator>(using generator: inout G) -> PeerID {
    while true {
      let id = PeerID(high: generator.next(), low: generator.next())
      if id.isValid { return id }
    }
  }

  /// Parses 32 hexadecimal digits (either case).
  /// - Returns: `nil` when the text is not 32 hex digits or is all zeros.
  public init?(hex text: some StringProtocol) {
    let utf8 = Array(text.utf8)
    guard utf8.count == 32 else { return nil }
    var high: UInt64 = 0
    var low: UInt64 = 0
    for (index, byte) in utf8.enumerated() {
      guard let nibble = Self.nibble(byte) else { return nil }
      if index < 16 {
        high = high << 4 | UInt64(nibble)
      } else {
        low = low << 4 | UInt64(nibble)
      }
    }
    self.init(high: high, low: low)
    guard isValid else { return nil }
  }

  /// Reads 16 bytes, most significant first.
  /// - Returns: `nil` unless `bytes` has exactly 16 elements.
  public init?(bytes: some Collection<UInt8>) {
    guard bytes.count == 16 else { return nil }
    // Contiguous bytes (an array, almost always) are read as two big-endian words: the
    // generic loop cost six times the BLAKE2b hash that derives an id in a debug build, and a
    // relay checks an id per roster entry.
    if let words = bytes.withContiguousStorageIfAvailable({ buffer in
      let raw = UnsafeRawBufferPointer(buffer)
      return (UInt64(bigEndian: raw.loadUnaligned(as: UInt64.self)), UInt64(bigEndian: raw.loadUnaligned(fromByteOffset: 8, as: UInt64.self)))
    }) {
      self.init(high: words.0, low: words.1)
      return
    }
    var high: UInt64 = 0
    var low: UInt64 = 0
    for (index, byte) in bytes.enumerated() {
      if index < 8 {
        high = high << 8 | UInt64(byte)
      } else {
        low = low << 8 | UInt64(byte)
      }
    }
    self.init(high: high, low: low)
  }

  /// `false` for the all-zero id, which the protocol forbids.
  public var isValid: Bool { high != 0 || low != 0 }

  /// The 16 bytes, most significant first.
  public var bytes: [UInt8] {
    var result = [UInt8]()
    result.reserveCapacity(16)
    for shift in stride(from: 56, through: 0, by: -8) { result.append(UInt8(truncatingIfNeeded: high >> UInt64(shift))) }
    for shift in stride(from: 56, through: 0, by: -8) { result.append(UInt8(truncatingIfNeeded: low >> UInt64(shift))) }
    return result
  }

  /// 32 lowercase hexadecimal digits.
  public var hex: String {
    var digits = [UInt8]()
    digits.reserveCapacity(32)
    for half in [high, low] {
      for shift in stride(from: 60, through: 0, by: -4) {
        digits.append(Self.hexDigits[Int((half >> UInt64(shift)) & 0xF)])
      }
    }
    return String(decoding: digits, as: UTF8.self)
  }

  /// The first 8 hex digits: enough to tell peers apart on a screen.
  public var shortHex: String { String(hex.prefix(8)) }

  public var description: String { hex }

  public static func < (lhs: PeerID, rhs: PeerID) -> Bool {
    (lhs.high, lhs.low) < (rhs.high, rhs.low)
  }

  public func hash(into hasher: inout Hasher) {
    hasher.combine(high)
    hasher.combine(low)
  }

  /// What sets and dictionaries hash: two folded multiplications keyed with secret random
  /// numbers drawn once per process (`hashKey`) instead of SipHash, which cost about 150
  /// instructions per lookup, and a session looks peers up about five times per message.
  /// Peers choose their ids (a TXT record, a roster, a message's recipients), so the hash must
  /// not let them choose collisions (a table whose ids all share a bucket costs a scan per
  /// lookup): without the keys, which never leave the process, which ids collide can only be
  /// guessed.
  public func _rawHashValue(seed: Int) -> Int {
    let key = Self.hashKey
    let first = (high ^ key.0).multipliedFullWidth(by: low ^ key.1 ^ UInt64(UInt(bitPattern: seed)))
    let second = (first.high ^ first.low ^ key.2).multipliedFullWidth(by: key.3)
    return Int(truncatingIfNeeded: second.high ^ second.low)
  }

  /// The keys of ``_rawHashValue(seed:)``: random, drawn once per process. The last is odd,
  /// so that the low half of the second product tells all its inputs apart.
  private static let hashKey: (UInt64, UInt64, UInt64, UInt64) = {
    var generator = SystemRandomNumberGenerator()
    return (generator.next(), generator.next(), generator.next(), generator.next() | 1)
  }()

  private static let hexDigits = Array("0123456789abcdef".utf8)

  private static func nibble(_ byte: UInt8) -> UInt8? {
    switch byte {
    case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
    case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
    case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
    default: return nil
    }
  }
}
