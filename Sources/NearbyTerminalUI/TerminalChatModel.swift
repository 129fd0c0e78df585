import Nearby
import NearbyChat

/// The terminal chat, without a terminal: key bytes, chat lines, resizes and time go in;
/// the bytes to write to the terminal and the lines to hand to ``LineChat`` come out.
///
/// The screen it keeps: the input line (prompt, typed text, wrapped over as many rows as
/// it needs) sits on the bottom rows; the lines of the chat scroll above it. Every change
/// is drawn with absolute cursor positions and autowrap off, so every row the model counts
/// is one row on the terminal and arriving lines never garble a half-typed one. A resize
/// (or Ctrl-L) repaints the whole screen from the lines the model keeps.
public struct TerminalChatModel: Sendable {
  /// The terminal's size in character cells.
  public struct Size: Hashable, Sendable {
    public var columns: Int
    public var rows: Int
    public init(columns: Int, rows: Int) {
      self.columns = max(1, columns)
      self.rows = max(1, rows)
    }
  }

  public enum Event: Sendable {
    /// The first draw: moves to the bottom of the screen and shows the prompt.
    case start
    /// Bytes typed at the terminal.
    case input([UInt8])
    /// Nothing followed an ESC for a moment: it was the Escape key.
    case escapeTimeout
    /// A line from the chat.
    case line(ChatLine)
    case resize(Size)
    /// What the session knows about peers (corrects the prompt's counts).
    case roster(found: [Peer], connected: [Peer], inviting: [Peer])
    /// Repaint everything (after a suspend).
    case redraw
    /// The chat ends: clear the input line, turn autowrap and the cursor back on.
    case finish
  }

  public enum Effect: Hashable, Sendable {
    /// Bytes for the terminal.
    case write(String)
    /// A line for the chat (a command or a message).
    case submit(String)
    /// Keep a line in the history file.
    case remember(String)
    /// Ctrl-C on an empty line, or Ctrl-D on an empty line: leave (like /quit).
    case quit
    /// Ctrl-C again while leaving: leave now.
    case forceQuit
    /// Ctrl-Z: give the terminal back and stop until `fg`.
    case suspend
  }

  public internal(set) var editor = LineEditor()
  public internal(set) var history: InputHistory
  public internal(set) var roster = PeerRoster()
  public internal(set) var size: Size
  /// The lines above the input line, oldest first (at most ``maximumEntries``).
  public internal(set) var entries: [ScreenEntry] = []
  public internal(set) var isQuitting = false
  /// Whether text is styled with colors and attributes (`NO_COLOR`, `--no-color`).
  public let color: Bool
  public static let maximumEntries = 2000

  /// Whether an escape sequence waits for more bytes (see ``KeyDecoder/isWaiting``).
  public var isWaitingForKeys: Bool { decoder.isWaiting }

  var decoder = KeyDecoder()
  var styler: ChatLineStyler
  /// Entries dropped from the front so far (an entry's serial minus this is its index).
  var droppedEntries = 0
  /// Our messages whose delivery mark may still change, with their entry's serial. The
  /// session says when each is settled (``ChatLine/settled(_:)``).
  var outgoing: [MessageID: Int] = [:]
  /// The rows of the input line as last drawn (at the bottom of the screen).
  var drawnInputRows = 1
  /// Where the cursor was put after the last draw (1-based row and column).
  var cursorPosition = (row: 1, column: 1)
  var now: UInt64 = 0

  public init(me: Peer, size: Size, color: Bool, history: [String] = [], historyCapacity: Int = 1000) {
    styler = ChatLineStyler(me: me)
    self.size = size
    self.color = color
    self.history = InputHistory(history, capacity: historyCapacity)
  }

  /// Handles one event at time `now` (milliseconds since the epoch, for timestamps).
  public mutating func update(_ event: Event, now: UInt64) -> [Effect] {
    self.now = now
    var screen = ""
    var effects: [Effect] = []
    switch event {
    case .start:
      // Put the cursor on the bottom row, whatever row the shell left it on.
      screen += "\u{1B}[?7l" + String(repeating: "\r\n", count: size.rows - 1)
      drawnInputRows = 1
      draw(appending: [], into: &screen)
    case .input(let bytes):
      handle(decoder.decode(bytes), into: &screen, effects: &effects)
    case .escapeTimeout:
      handle(decoder.flush(), into: &screen, effects: &effects)
    case .line(let line):
      let shown = show(line, into: &screen)
      draw(appending: shown, into: &screen)
    case .resize(let newSize):
      size = newSize
      repaint(into: &screen)
    case .roster(let found, let connected, let inviting):
      let before = prompt
      roster.replace(found: found, connected: connected, inviting: inviting)
      if prompt != before { draw(appending: [], into: &screen) }
    case .redraw:
      repaint(into: &screen)
    case .finish:
      screen += cursorTo(row: size.rows - drawnInputRows + 1, column: 1) + "\u{1B}[J\u{1B}[0m\u{1B}[?7h\u{1B}[?25h"
    }
    return screen.isEmpty ? effects : [.write(screen)] + effects
  }

  // MARK: Chat lines

  /// Updates the state for a chat line. - Returns: the entries to show.
  mutating func show(_ line: ChatLine, into screen: inout String) -> [ScreenEntry] {
    roster.apply(line)
    switch line {
    case .ready(let peer, _, _):
      styler.me = peer
    case .sent(let id, _, _, _):
      let shown = styler.entries(for: line, now: now)
      outgoing[id] = droppedEntries + entries.count
      return shown
    case .event(.delivered(let id, _)):
      // The mark changes once every recipient has answered; no line of its own.
      if outgoing[id] != nil { return [] }
    case .event(.error(.undelivered(let id, _, _, _))):
      if let serial = outgoing[id] { mark(serial: serial, .failed, into: &screen) }
    case .settled(let report):
      if let serial = outgoing.removeValue(forKey: report.messageID) {
        mark(serial: serial, report.isDelivered ? .delivered : .failed, into: &screen)
      }
      return []
    default:
      break
    }
    return styler.entries(for: line, now: now)
  }

  /// Adds entries to the kept lines (the oldest beyond the limit are forgotten).
  mutating func remember(_ new: [ScreenEntry]) {
    entries.append(contentsOf: new)
    let excess = entries.count - Self.maximumEntries
    if excess > 0 {
      entries.removeFirst(excess)
      droppedEntries += excess
    }
  }

  /// The prompt: our name and the counts of connected peers, found peers and invitations.
  var prompt: StyledLine {
    var counts = "\(roster.connected.count) connected, \(roster.found.count) found"
    if !roster.inviting.isEmpty { counts += ", \(roster.inviting.count) invitation\(roster.inviting.count == 1 ? "" : "s")" }
    var line = StyledLine(EventFormatter.sanitize(styler.me.name.value), .bold)
    if size.columns >= 50 {
      line.append(" (\(counts))", .dim)
    } else {
      line.append(" \(roster.connected.count)/\(roster.found.count)", .dim)
    }
    line.append("> ")
    return line
  }
}
