/// A DNS-SD service type of the form `_name._tcp`, validated by the rules of the protocol
/// (and of MultipeerConnectivity): a name of 1–15 characters from `a-z`, `0-9` and `-`,
/// with at least one letter and no leading, trailing or adjacent hyphens.
public struct ServiceType: Hashable, Sendable, CustomStringConvertible {
  /// The default type, `_nearby-devices._tcp`.
  public static let `default` = try! ServiceType("nearby-devices")

  /// The bare name, such as `nearby-devices`.
  public let name: String

  /// Accepts the bare name (`nearby-devices`) or the full type (`_nearby-devices._tcp`,
  /// with or without a trailing dot).
  /// - Throws: ``ServiceTypeError`` naming the broken rule.
  public init(_ text: String) throws(ServiceTypeError) {
    var candidate = Substring(text)
    if candidate.hasPrefix("_") {
      candidate = candidate.dropFirst()
      if candidate.hasSuffix(".") { candidate = candidate.dropLast() }
      if candidate.hasSuffix("._tcp") {
        candidate = candidate.dropLast(5)
      } else if candidate.hasSuffix("._udp") {
        throw .notTCP(text)
      } else {
        throw .malformed(text)
      }
    }
    let name = String(candidate)
    try Self.validate(name: name, original: text)
    self.name = name
  }

  /// The registration type passed to DNS-SD: `_name._tcp`.
  public var type: String { "_\(name)._tcp" }

  public var description: String { type }

  private static func validate(name: String, original: String) throws(ServiceTypeError) {
    let bytes = Array(name.utf8)
    if bytes.isEmpty { throw .empty(original) }
    if bytes.count > 15 { throw .tooLong(original, count: bytes.count) }
    var hasLetter = false
    var previous: UInt8 = 0
    for byte in bytes {
      switch byte {
      case UInt8(ascii: "a")...UInt8(ascii: "z"): hasLetter = true
      case UInt8(ascii: "0")...UInt8(ascii: "9"): break
      case UInt8(ascii: "-"):
        if previous == UInt8(ascii: "-") { throw .adjacentHyphens(original) }
      default:
        throw .invalidCharacter(original, Character(Unicode.Scalar(byte)))
      }
      previous = byte
    }
    if bytes.first == UInt8(ascii: "-") || bytes.last == UInt8(ascii: "-") {
      throw .edgeHyphen(original)
    }
    if !hasLetter { throw .noLetter(original) }
  }
}

/// Why a service type was refused; the description says how to write a valid one.
public enum ServiceTypeError: Error, Equatable, Sendable, CustomStringConvertible {
  case empty(String)
  case tooLong(String, count: Int)
  case invalidCharacter(String, Character)
  case noLetter(String)
  case edgeHyphen(String)
  case adjacentHyphens(String)
  case notTCP(String)
  case malformed(String)

  private static let rule =
    "a service type is 1-15 characters of a-z, 0-9 and '-', with at least one letter and no leading, trailing or adjacent hyphens (for example nearby-devices or _nearby-devices._tcp)"

  public var description: String {
    let what: String
    switch self {
    case .empty: what = "the service type is empty"
    case .tooLong(let text, let count):
      what = "the service type '\(text)' has \(count) characters, more than 15"
    case .invalidCharacter(let text, let character):
      what = "the service type '\(text)' contains '\(character)'"
    case .noLetter(let text): what = "the service type '\(text)' has no letter"
    case .edgeHyphen(let text): what = "the service type '\(text)' begins or ends with a hyphen"
    case .adjacentHyphens(let text): what = "the service type '\(text)' has adjacent hyphens"
    case .notTCP(let text): what = "the service type '\(text)' is UDP; Nearby needs _tcp"
    case .malformed(let text): what = "the service type '\(text)' is not of the form _name._tcp"
    }
    return "\(what): \(Self.rule)"
  }
}
