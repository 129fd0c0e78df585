import Nearby

/// The kinds of event a script can wait for: the `event` names of `nearby chat --json`.
public enum ScriptEventKind: String, Sendable, CaseIterable {
  case ready, advertised, found, updated, lost
  case invitation, invitationWithdrawn, connecting, connected, declined, disconnected
  case reconnecting, reconnected
  case message, sent, delivered, queued, error, notice
  case peers, who, invitations, foreign, rejected
  case reachable, unreachable, relayed
  case verification, trusted, impostor
  case offer, transfer, transfers
  case transferDone = "transfer-done"
  case transferFailed = "transfer-failed"
  case transferCancelled = "transfer-cancelled"

  /// Parses a name from a script: the JSON name, any case; `withdrawn` for `invitationWithdrawn`.
  public init?(scriptName: String) {
    let lowered = scriptName.lowercased()
    if lowered == "withdrawn" {
      self = .invitationWithdrawn
      return
    }
    guard let kind = Self.allCases.first(where: { $0.rawValue.lowercased() == lowered }) else { return nil }
    self = kind
  }

  /// Whether events of this kind can name a peer (so `from NAME` can match).
  public var hasPeer: Bool {
    switch self {
    case .ready, .advertised, .notice, .foreign: false
    default: true
    }
  }

  /// What a `"text"` or `/regex/` of an expectation is matched against, for the README and hints.
  public var textMeaning: String {
    switch self {
    case .message, .sent: "the message text"
    case .invitation: "the invitation's context"
    case .declined, .disconnected, .invitationWithdrawn, .rejected, .foreign, .transferFailed, .transferCancelled: "the reason"
    case .error, .notice: "the message"
    case .advertised: "the advertised instance name"
    case .verification: "the six-digit code"
    default: "the line as printed"
    }
  }
}

/// What an event's text must be: exactly a string, or containing a match of a regular
/// expression (Swift `Regex` syntax).
public enum TextPattern: Sendable, Equatable, CustomStringConvertible {
  case exact(String)
  /// The pattern is checked when parsed; it is compiled again for matching because
  /// `Regex` is not `Sendable`.
  case regex(String, ignoresCase: Bool)

  public func matches(_ text: String) -> Bool {
    switch self {
    case .exact(let expected): return text == expected
    case .regex(let pattern, let ignoresCase):
      guard var regex = try? Regex(pattern) else { return false }
      if ignoresCase { regex = regex.ignoresCase() }
      return text.firstMatch(of: regex) != nil
    }
  }

  public var description: String {
    switch self {
    case .exact(let text): ScriptQuoting.quote(text)
    case .regex(let pattern, let ignoresCase): "/" + pattern.replacing("/", with: "\\/") + "/" + (ignoresCase ? "i" : "")
    }
  }
}

/// `expect [next|no] EVENT [from NAME] ["text" | /regex/] [within DURATION]`.
public struct ScriptExpectation: Sendable, Equatable, CustomStringConvertible {
  /// Which event satisfies the expectation.
  public enum Mode: String, Sendable, Equatable {
    /// The oldest unused event that matches (the default).
    case any
    /// `expect next`: the oldest unused event of that kind (and peer) must also match the
    /// text; another one fails the script (for checking order and copies).
    case next
    /// `expect no`: no matching event may arrive within the timeout.
    case none = "no"
  }

  public var event: ScriptEventKind
  /// A peer's name (any case) or 4+ hex digits of its id.
  public var peer: String?
  public var text: TextPattern?
  public var timeout: Duration
  public var mode: Mode

  public init(
    event: ScriptEventKind, peer: String? = nil, text: TextPattern? = nil, timeout: Duration = ChatScript.defaultTimeout, mode: Mode = .any
  ) {
    self.event = event
    self.peer = peer
    self.text = text
    self.timeout = timeout
    self.mode = mode
  }

  /// Whether `event` is one this expectation waits for.
  public func matches(_ candidate: ScriptEvent) -> Bool {
    guard candidate.kind == event else { return false }
    if let peer, !candidate.peers.contains(where: { Self.peer($0, isCalled: peer) }) { return false }
    if let text, !text.matches(candidate.text) { return false }
    return true
  }

  /// What an `expect next` takes: the next event of its kind and peer, whatever its text.
  var ignoringText: ScriptExpectation {
    var copy = self
    copy.text = nil
    return copy
  }

  /// A name matches case-insensitively; 4 or more hex digits match the start of the id.
  static func peer(_ peer: Peer, isCalled query: String) -> Bool {
    let lowered = query.lowercased()
    if peer.name.value.lowercased() == lowered { return true }
    return lowered.count >= 4 && lowered.allSatisfy(\.isHexDigit) && peer.id.hex.hasPrefix(lowered)
  }

  /// The expectation in script syntax, with its timeout.
  public var description: String {
    var parts = ["expect"] + (mode == .any ? [] : [mode.rawValue]) + [event.rawValue]
    if let peer { parts += ["from", ScriptQuoting.quoteIfNeeded(peer)] }
    if let text { parts.append(text.description) }
    parts += ["within", ScriptDuration.format(timeout)]
    return parts.joined(separator: " ")
  }
}

/// Quoting of strings in script syntax.
enum ScriptQuoting {
  static func quote(_ text: String) -> String {
    var out = "\""
    for character in text {
      switch character {
      case "\"": out += "\\\""
      case "\\": out += "\\\\"
      case "\n": out += "\\n"
      case "\t": out += "\\t"
      case "\r": out += "\\r"
      default: out.append(character)
      }
    }
    return out + "\""
  }

  static func quoteIfNeeded(_ text: String) -> String {
    text.isEmpty || text.contains(where: { $0.isWhitespace || $0 == "\"" || $0 == "#" || $0 == "\\" }) ? quote(text) : text
  }
}
