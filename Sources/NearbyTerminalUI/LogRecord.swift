import Nearby

/// One line of a conversation's history file: a message in or out, or what became of one
/// of ours.
///
/// On disk a record is one line of tab-separated fields (`1`, the time in milliseconds, the
/// kind, the peer's id or `-`, the name, the message id or `-`, the text), with `\`, tab,
/// CR and LF escaped as `\\`, `\t`, `\r` and `\n`. A line that does not parse is skipped, so
/// a damaged file costs only its damaged lines.
public struct LogRecord: Hashable, Sendable {
  public enum Kind: String, Hashable, Sendable {
    /// A message from `peer`.
    case received = "r"
    /// A message of ours.
    case sent = "s"
    /// Our message `messageID` reached every recipient.
    case delivered = "d"
    /// Our message `messageID` did not reach every recipient.
    case failed = "f"
  }

  public var time: UInt64
  public var kind: Kind
  /// The sender of a received message.
  public var peer: PeerID?
  /// The sender's name (ours for sent messages).
  public var name: String
  public var messageID: MessageID?
  public var text: String

  public init(time: UInt64, kind: Kind, peer: PeerID? = nil, name: String = "", messageID: MessageID? = nil, text: String = "") {
    self.time = time
    self.kind = kind
    self.peer = peer
    self.name = name
    self.messageID = messageID
    self.text = text
  }

  /// The record as one line of the file (without its newline).
  public var encoded: String {
    [
      "1", String(time), kind.rawValue, peer?.hex ?? "-", Self.escape(name), messageID.map { String($0.rawValue) } ?? "-", Self.escape(text),
    ].joined(separator: "\t")
  }

  /// A record from one line of the file, or nil when the line is not one.
  public init?(encoded line: some StringProtocol) {
    let fields = line.split(separator: "\t", omittingEmptySubsequences: false)
    guard fields.count == 7, fields[0] == "1", let time = UInt64(fields[1]), let kind = Kind(rawValue: String(fields[2])) else { return nil }
    var peer: PeerID?
    if fields[3] != "-" {
      guard let id = PeerID(hex: fields[3]) else { return nil }
      peer = id
    }
    var messageID: MessageID?
    if fields[5] != "-" {
      guard let raw = UInt64(fields[5]) else { return nil }
      messageID = MessageID(rawValue: raw)
    }
    guard let name = Self.unescape(fields[4]), let text = Self.unescape(fields[6]) else { return nil }
    self.init(time: time, kind: kind, peer: peer, name: name, messageID: messageID, text: text)
  }

  /// The text on one line of a history file: `\\`, tab, line feed and carriage return as
  /// `\\`, `\t`, `\n`, `\r`, and every other character hidden by PROTOCOL.md 2.3 (escape,
  /// C1 controls, bidirectional controls, ...) as `\u{HEX}`, so that reading the file with
  /// `cat` or `less -R` shows a peer's escape sequences instead of running them.
  static func escape(_ text: String) -> String {
    var out = ""
    let scalars = Array(text.unicodeScalars)
    for (index, scalar) in scalars.enumerated() {
      switch scalar {
      case "\\": out += "\\\\"
      case "\t": out += "\\t"
      case "\n": out += "\\n"
      case "\r": out += "\\r"
      default:
        let hidden = HiddenCharacters.isHidden(
          scalar, after: index > 0 ? scalars[index - 1] : nil, before: index + 1 < scalars.count ? scalars[index + 1] : nil)
        if hidden {
          out += "\\u{\(String(scalar.value, radix: 16, uppercase: true))}"
        } else {
          out.unicodeScalars.append(scalar)
        }
      }
    }
    return out
  }

  static func unescape(_ text: some StringProtocol) -> String? {
    var out = ""
    var escaped = false
    var scalars = text.unicodeScalars.makeIterator()
    while let scalar = scalars.next() {
      if escaped {
        switch scalar {
        case "\\": out += "\\"
        case "t": out += "\t"
        case "n": out += "\n"
        case "r": out += "\r"
        case "u":
          guard scalars.next() == "{" else { return nil }
          var hex = ""
          var closed = false
          while let digit = scalars.next() {
            if digit == "}" {
              closed = true
              break
            }
            hex.unicodeScalars.append(digit)
            guard hex.unicodeScalars.count <= 6 else { return nil }
          }
          guard closed, let value = UInt32(hex, radix: 16), let decoded = Unicode.Scalar(value) else { return nil }
          out.unicodeScalars.append(decoded)
        default: return nil
        }
        escaped = false
      } else if scalar == "\\" {
        escaped = true
      } else {
        out.unicodeScalars.append(scalar)
      }
    }
    return escaped ? nil : out
  }
}
