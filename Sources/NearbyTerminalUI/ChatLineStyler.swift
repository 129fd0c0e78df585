import Nearby
import NearbyChat

/// A line above the input, as the terminal chat keeps it.
public struct ScreenEntry: Hashable, Sendable {
  public var line: StyledLine
  /// Own messages: the id whose delivery mark the line shows (in span 1).
  public var messageID: MessageID?

  public init(_ line: StyledLine, messageID: MessageID? = nil) {
    self.line = line
    self.messageID = messageID
  }
}

/// Whether an own message reached its peers, as the mark on its line shows.
public enum DeliveryMark: Hashable, Sendable {
  case pending
  case delivered
  case failed

  public var span: StyledSpan {
    switch self {
    case .pending: StyledSpan(".", .dim)
    case .delivered: StyledSpan("✓", TextStyle(foreground: 32))
    case .failed: StyledSpan("✗", .error)
    }
  }
}

/// How the terminal chat shows ``ChatLine``s: `[12:02:03] k text`, where `k` is a one-column
/// kind mark (`*` a notice, `!` an error, a delivery mark on own messages, blank for
/// messages from others). Peer names take a stable color from their id; notices are dim.
public struct ChatLineStyler: Sendable {
  /// Who we are (own messages show this name).
  public var me: Peer
  private let plain = PlainOutput(json: false)

  public init(me: Peer) { self.me = me }

  /// The SGR colors peer names cycle through.
  public static let peerColors: [UInt8] = [32, 33, 34, 35, 36, 91]

  /// The color of a peer's name: the same for the same id, run after run.
  public static func color(of id: PeerID) -> UInt8 {
    var hash: UInt64 = 0xcbf2_9ce4_8422_2325  // FNV-1a
    for byte in id.bytes {
      hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3
    }
    return peerColors[Int(hash % UInt64(peerColors.count))]
  }

  /// The columns before the kind mark (`[12:02:03] `).
  public static let markColumn = 11

  /// The entries a chat line shows, stamped with `now` (milliseconds since the epoch).
  public func entries(for line: ChatLine, now: UInt64) -> [ScreenEntry] {
    let time = StyledSpan("[\(EventFormatter.clock(now))] ", .dim)
    switch line {
    case .event(.message(let message)):
      var styled = StyledLine([time, StyledSpan(" "), StyledSpan(" ")])
      styled.append(EventFormatter.sanitize(message.from.name.value), TextStyle(foreground: Self.color(of: message.from.id), bold: true))
      if message.isPrivate { styled.append(" (private)", .dim) }
      styled.append(": " + EventFormatter.sanitize(String(decoding: message.body, as: UTF8.self)))
      return [ScreenEntry(styled)]
    case .sent(let id, let text, let peers, let isPrivate):
      var styled = StyledLine([time, DeliveryMark.pending.span, StyledSpan(" ")])
      styled.append(EventFormatter.sanitize(me.name.value), .bold)
      if isPrivate {
        styled.append(" -> ", .dim)
        for (index, peer) in peers.enumerated() {
          if index > 0 { styled.append(", ", .dim) }
          styled.append(EventFormatter.sanitize(peer.name.value), TextStyle(foreground: Self.color(of: peer.id)))
        }
      }
      styled.append(": " + EventFormatter.sanitize(text))
      return [ScreenEntry(styled, messageID: id)]
    case .event(.invitation):
      return notices(plain.render(line), time: time, style: .attention)
    case .event(.error), .error:
      return notices(plain.render(line), time: time, style: .error)
    case .ready:
      return notices(plain.render(line).map { $0 + ", Tab completes, Ctrl-D leaves" }, time: time, style: .dim)
    default:
      return notices(plain.render(line), time: time, style: .dim)
    }
  }

  /// An echo of a command typed at the input line.
  public func echo(_ command: String, now: UInt64) -> ScreenEntry {
    ScreenEntry(StyledLine([StyledSpan("[\(EventFormatter.clock(now))] > \(EventFormatter.sanitize(command))", .dim)]))
  }

  /// A notice of the terminal chat itself.
  public func notice(_ text: String, now: UInt64, style: TextStyle = .dim) -> ScreenEntry {
    notices("* " + text, time: StyledSpan("[\(EventFormatter.clock(now))] ", .dim), style: style)[0]
  }

  /// One entry per line of `text`; a leading `* ` or `! ` becomes the kind mark.
  private func notices(_ text: String?, time: StyledSpan, style: TextStyle) -> [ScreenEntry] {
    guard let text else { return [] }
    return text.split(separator: "\n", omittingEmptySubsequences: false).map { row in
      var body = String(row)
      var kind = " "
      if body.hasPrefix("* ") || body.hasPrefix("! ") {
        kind = String(body.prefix(1))
        body = String(body.dropFirst(2))
      }
      return ScreenEntry(StyledLine([time, StyledSpan(kind, style), StyledSpan(" " + body, style)]))
    }
  }
}
