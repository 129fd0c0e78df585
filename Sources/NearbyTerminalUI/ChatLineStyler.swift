import Nearby
import NearbyChat

/// How the terminal chat shows ``ChatLine``s: `[12:02:03] k text`, where `k` is a one-column
/// kind mark (`*` a notice, `!` an error, a delivery mark on own messages, blank for
/// messages from others). Message text wraps under itself (the entry's indent), keeps its
/// newlines, and peer names take a stable color from their id; notices are dim.
public struct ChatLineStyler: Sendable {
  /// Who we are (own messages show this name; a message naming it is a mention).
  public var me: Peer
  /// Colors from the 256-color palette (readable on dark and light backgrounds), or only
  /// the 16 basic ones.
  public var extendedColors: Bool
  /// The peers seen so far: a name that looks like another's is shown with its short id.
  public var names = KnownPeerNames()
  private let plain = PlainOutput(json: false)

  public init(me: Peer, extendedColors: Bool = true) {
    self.me = me
    self.extendedColors = extendedColors
  }

  /// 256-color palette entries of middle lightness, each with a contrast of about 4:1 or
  /// more against both black and white, in hues far enough apart to tell names apart.
  public static let peerPalette: [UInt8] = [130, 64, 28, 30, 32, 62, 98, 134, 163, 161]
  /// The basic colors for terminals without 256 colors.
  public static let peerColors: [UInt8] = [32, 33, 34, 35, 36, 91]

  /// A stable number for a peer id (FNV-1a of its bytes): the same id, the same color.
  static func hash(of id: PeerID) -> UInt64 {
    var hash: UInt64 = 0xcbf2_9ce4_8422_2325
    for byte in id.bytes { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
    return hash
  }

  /// The basic color of a peer's name.
  public static func color(of id: PeerID) -> UInt8 { peerColors[Int(hash(of: id) % UInt64(peerColors.count))] }

  /// The style of a peer's name: bold, in the peer's color.
  public func nameStyle(of id: PeerID) -> TextStyle {
    extendedColors
      ? TextStyle(palette: Self.peerPalette[Int(Self.hash(of: id) % UInt64(Self.peerPalette.count))], bold: true)
      : TextStyle(foreground: Self.color(of: id), bold: true)
  }

  /// The columns before the kind mark (`[12:02:03] `).
  public static let markColumn = 11
  /// The columns before a notice's text (`[12:02:03] * `).
  public static let noticeIndent = 13
  /// The most rows of one message shown; a longer one ends with a line saying how many more.
  public static let maximumMessageLines = 200
  /// The most bytes of one message kept, shown and written to its history: a screenful is
  /// a few kilobytes, and a peer sending megabyte messages must not make the chat keep them
  /// (each took several times its size once styled and wrapped).
  public static let maximumMessageBytes = 16 << 10

  /// `bytes` as text, at most ``maximumMessageBytes`` of them (cut between characters),
  /// followed by a line saying how many more there were.
  public static func clipped(_ bytes: some Collection<UInt8>) -> String {
    guard bytes.count > maximumMessageBytes else { return String(decoding: bytes, as: UTF8.self) }
    var end = bytes.index(bytes.startIndex, offsetBy: maximumMessageBytes)
    // Back to the start of a character: not before a continuation byte (10xxxxxx).
    var back = 0
    while back < 3, end > bytes.startIndex, bytes[end] & 0xC0 == 0x80 {
      end = bytes.index(end, offsetBy: -1)
      back += 1
    }
    let kept = bytes[bytes.startIndex..<end]
    let more = bytes.count - kept.count
    return String(decoding: kept, as: UTF8.self) + "\n… \(more) more byte\(more == 1 ? "" : "s")"
  }

  /// ``clipped(_:)`` for text.
  public static func clipped(_ text: String) -> String {
    text.utf8.count > maximumMessageBytes ? clipped(text.utf8) : text
  }

  func time(_ now: UInt64) -> StyledSpan { StyledSpan("[\(EventFormatter.clock(now))] ", .dim) }

  /// A message from a peer. - Parameters: `text`: its body as ``clipped(_:)`` gives it (the
  /// caller logs the same); `inPeerConversation`: it is shown in the conversation with the
  /// sender, where "(private)" goes without saying.
  func message(_ message: ReceivedMessage, text: String? = nil, now: UInt64, inPeerConversation: Bool) -> ScreenEntry {
    let text = text ?? Self.clipped(message.body)
    return received(label: names.label(message.from), id: message.from.id, text: text, now: now, tag: message.isPrivate && !inPeerConversation)
  }

  /// - Parameter label: the sender's name as shown (made safe for the terminal already).
  func received(label: String, id: PeerID, text: String, now: UInt64, tag: Bool) -> ScreenEntry {
    var line = StyledLine([time(now), StyledSpan(" "), StyledSpan(" ")])
    line.append(label, nameStyle(of: id))
    if tag { line.append(" (private)", .dim) }
    line.append(": ")
    let indent = line.width
    line.append(Self.body(text), Self.mentions(me.name.value, in: text) ? .bold : .plain)
    return ScreenEntry(line, kind: .message, indent: indent, time: now)
  }

  /// A message of ours. - Parameter recipients: shown after our name (`alice -> bob:`), for
  /// a private message outside the conversation with its peer.
  func own(_ id: MessageID?, text: String, recipients: [Peer], mark: DeliveryMark, now: UInt64) -> ScreenEntry {
    var line = StyledLine([time(now), mark.span, StyledSpan(" ")])
    line.append(EventFormatter.sanitize(me.name.value), .bold)
    if !recipients.isEmpty {
      line.append(" -> ", .dim)
      for (index, peer) in recipients.enumerated() {
        if index > 0 { line.append(", ", .dim) }
        var style = nameStyle(of: peer.id)
        style.bold = false
        line.append(names.label(peer), style)
      }
    }
    line.append(": ")
    let indent = line.width
    line.append(Self.body(text))
    return ScreenEntry(line, kind: .own, indent: indent, time: now, messageID: id)
  }

  /// A message from a history file (nil for the records that only update one).
  func entry(for record: LogRecord) -> ScreenEntry? {
    switch record.kind {
    case .received:
      return received(
        label: EventFormatter.sanitize(record.name), id: record.peer ?? PeerID(high: 0, low: 0), text: Self.clipped(record.text), now: record.time,
        tag: false)
    case .sent:
      return own(record.messageID, text: Self.clipped(record.text), recipients: [], mark: .pending, now: record.time)
    case .delivered, .failed:
      return nil
    }
  }

  /// Text from a peer for the log: each line made safe for the terminal (see
  /// ``EventFormatter/sanitize(_:)``), the newlines kept, at most ``maximumMessageLines``.
  static func body(_ text: String) -> String {
    // By scalars: "\r\n" is one Character, which a split at "\n" would not see.
    var lines = [""]
    for scalar in text.unicodeScalars {
      if scalar == "\n" { lines.append("") } else { lines[lines.count - 1].unicodeScalars.append(scalar) }
    }
    lines = lines.map { line in
      var line = line
      if line.unicodeScalars.last == "\r" { line.unicodeScalars.removeLast() }
      return EventFormatter.sanitize(line)
    }
    if lines.count > maximumMessageLines {
      let more = lines.count - maximumMessageLines
      lines = Array(lines.prefix(maximumMessageLines)) + ["… \(more) more line\(more == 1 ? "" : "s")"]
    }
    return lines.joined(separator: "\n")
  }

  /// Whether `text` names `name` as a word of its own, ignoring case (`bob:`, `hi Bob!`, not
  /// `bobby`).
  public static func mentions(_ name: String, in text: String) -> Bool {
    let needle = Array(name.lowercased())
    let haystack = Array(text.lowercased())
    guard !needle.isEmpty, haystack.count >= needle.count else { return false }
    func isWord(_ character: Character) -> Bool { character.isLetter || character.isNumber || character == "_" }
    for start in 0...(haystack.count - needle.count) where Array(haystack[start..<(start + needle.count)]) == needle {
      let before = start == 0 || !isWord(haystack[start - 1])
      let after = start + needle.count == haystack.count || !isWord(haystack[start + needle.count])
      if before && after { return true }
    }
    return false
  }

  /// The entries of any other chat line, stamped with `now` (milliseconds since the epoch).
  /// Discovery is quiet: `found` and `lost` without addresses (`/peers` has them), and
  /// `updated` only when the name changed (`previousName`).
  func entries(for line: ChatLine, now: UInt64, previousName: String? = nil) -> [ScreenEntry] {
    switch line {
    case .event(.found(let discovered)):
      return notices("* found \(EventFormatter.label(discovered.peer))", now: now, style: .dim)
    case .event(.updated(let discovered)):
      guard let previousName, previousName != discovered.peer.name.value else { return [] }
      let label = EventFormatter.label(discovered.peer)
      return notices("* \(EventFormatter.sanitize(previousName)) is now called \(label)", now: now, style: .dim)
    case .event(.invitation), .event(.verification):
      return notices(plain.render(line), now: now, style: .attention)
    case .event(.error), .event(.impostorWarning), .error:
      return notices(plain.render(line), now: now, style: .error)
    case .ready:
      return notices(plain.render(line).map { $0 + ", /help keys for the keys, Ctrl-D leaves" }, now: now, style: .dim)
    default:
      return notices(plain.render(line), now: now, style: .dim)
    }
  }

  /// An echo of a command typed at the input line.
  public func echo(_ command: String, now: UInt64) -> ScreenEntry {
    var line = StyledLine([time(now), StyledSpan(">", .dim), StyledSpan(" ", .dim)])
    line.append(EventFormatter.sanitize(command), .dim)
    return ScreenEntry(line, indent: Self.noticeIndent, time: now)
  }

  /// A notice of the terminal chat itself.
  public func notice(_ text: String, now: UInt64, style: TextStyle = .dim) -> ScreenEntry {
    notices("* " + text, now: now, style: style)[0]
  }

  /// An error of the terminal chat itself.
  public func error(_ text: String, now: UInt64) -> ScreenEntry {
    notices("! " + text, now: now, style: .error)[0]
  }

  /// One entry per line of `text`; a leading `* ` or `! ` becomes the kind mark.
  func notices(_ text: String?, now: UInt64, style: TextStyle) -> [ScreenEntry] {
    guard let text else { return [] }
    return text.split(separator: "\n", omittingEmptySubsequences: false).map { row in
      var body = String(row)
      var kind = " "
      if body.hasPrefix("* ") || body.hasPrefix("! ") {
        kind = String(body.prefix(1))
        body = String(body.dropFirst(2))
      }
      return ScreenEntry(
        StyledLine([time(now), StyledSpan(kind, style), StyledSpan(" " + body, style)]), indent: Self.noticeIndent, time: now)
    }
  }
}
