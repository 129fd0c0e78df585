import Nearby
import NearbyChat

/// The terminal chat, without a terminal: key bytes, chat lines, resizes and time go in;
/// the bytes to write to the terminal and the lines to hand to ``LineChat`` come out.
///
/// The screen it keeps, from the top: the log of the conversation shown, a status bar
/// (conversations with their unread counts, the peer counts), and the input line (prompt,
/// typed text, wrapped over as many rows as it needs) on the bottom rows. Every update
/// renders the whole screen as rows (``frame``) and writes only the rows that changed, with
/// absolute cursor positions and autowrap off, so every row the model counts is one row on
/// the terminal and arriving lines never garble a half-typed one. A resize (or Ctrl-L)
/// repaints every row.
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

  /// How the chat looks and behaves (the options of `nearby chat`).
  public struct Settings: Hashable, Sendable {
    /// Styles and colors (`NO_COLOR`, `--no-color` turn them off).
    public var color: Bool
    /// Names in the 256-color palette (else the 16 basic colors).
    public var extendedColors: Bool
    /// The terminal bell on a private message, an invitation or a mention of our name in a
    /// conversation not shown (`--no-bell` turns it off).
    public var bell: Bool
    /// Lines kept per conversation (`--scrollback`).
    public var scrollback: Int
    /// Text kept per conversation, in bytes (see ``Conversation/byteCapacity``).
    public var scrollbackBytes: Int

    public init(
      color: Bool = true, extendedColors: Bool = true, bell: Bool = true, scrollback: Int = 10_000,
      scrollbackBytes: Int = Conversation.defaultByteCapacity
    ) {
      self.color = color
      self.extendedColors = extendedColors
      self.bell = bell
      self.scrollback = max(1, scrollback)
      self.scrollbackBytes = max(1, scrollbackBytes)
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
    /// What the session knows about peers (corrects the counts).
    case roster(found: [Peer], connected: [Peer], inviting: [Peer], verified: Set<PeerID>? = nil)
    /// The history file of a conversation (asked for with ``Effect/openLog(_:)``), oldest first.
    case restored(Conversation.ID, [LogRecord])
    /// Repaint everything (after a suspend).
    case redraw
    /// The chat ends: clear the status bar and the input line, turn autowrap and the cursor
    /// back on.
    case finish
  }

  public enum Effect: Hashable, Sendable {
    /// Bytes for the terminal.
    case write(String)
    /// A line for the chat (a command or a message).
    case submit(String)
    /// Keep a line in the input history file.
    case remember(String)
    /// Read the history file of a conversation and send it back as ``Event/restored(_:_:)``.
    case openLog(Conversation.ID)
    /// Add a record to the history file of a conversation.
    case log(Conversation.ID, LogRecord)
    /// Ctrl-C on an empty line, or Ctrl-D on an empty line: leave (like /quit).
    case quit
    /// Ctrl-C again while leaving: leave now.
    case forceQuit
    /// Ctrl-Z: give the terminal back and stop until `fg`.
    case suspend
  }

  /// What the input line is doing.
  public enum InputMode: Hashable, Sendable {
    case editing
    /// Enter on a message of more than ``confirmLines`` lines: asking whether to send it.
    case confirming(lines: Int)
    /// Ctrl-R: the search term is typed here; the view shows the match.
    case searching(LineEditor)
  }

  public internal(set) var editor = LineEditor()
  public internal(set) var history: InputHistory
  public internal(set) var roster = PeerRoster()
  public internal(set) var size: Size
  /// The one with everyone first, then the private ones in the order they opened.
  public internal(set) var conversations: [Conversation]
  /// The index of the conversation shown.
  public internal(set) var current = 0
  public internal(set) var mode = InputMode.editing
  /// The text searched for last (`/search`, Ctrl-R).
  public internal(set) var searchTerm: String?
  public internal(set) var isQuitting = false
  public let settings: Settings

  /// More lines than this in one message are sent only after a question.
  public static let confirmLines = 5

  /// The conversation shown.
  public var shown: Conversation { conversations[current] }
  /// Whether text is styled with colors and attributes.
  public var color: Bool { settings.color }
  /// Whether an escape sequence waits for more bytes (see ``KeyDecoder/isWaiting``).
  public var isWaitingForKeys: Bool { decoder.isWaiting }

  var decoder = KeyDecoder()
  var styler: ChatLineStyler
  /// Our messages whose delivery mark may still change, with the lines that show them (in
  /// the conversation they belong to, and a copy where a private one was typed). The
  /// session says when each is settled (``ChatLine/settled(_:)``).
  var outgoing: [MessageID: [LineReference]] = [:]
  /// The rows as last written (nil: unknown, write it), and the cursor put after them.
  var drawn: [String?] = []
  var drawnCursor = (row: 0, column: 0)
  /// File transfers going on, shown as progress bars above the status bar.
  var transferBars: [TransferID: TransferProgress] = [:]
  /// The history files a private message to several peers went to (one per recipient),
  /// until its outcome is known.
  var alsoLogged: [MessageID: [Conversation.ID]] = [:]
  /// Offers not yet answered, by id, with the peer that made them.
  var pendingOffers: [TransferID: Peer] = [:]
  var now: UInt64 = 0

  struct LineReference: Hashable, Sendable {
    var conversation: Conversation.ID
    var serial: Int
  }

  public init(me: Peer, size: Size, settings: Settings = Settings(), history: [String] = [], historyCapacity: Int = 1000) {
    styler = ChatLineStyler(me: me, extendedColors: settings.extendedColors)
    self.size = size
    self.settings = settings
    self.history = InputHistory(history, capacity: historyCapacity)
    conversations = [Conversation(id: .everyone, title: "all", capacity: settings.scrollback, byteCapacity: settings.scrollbackBytes)]
  }

  /// Handles one event at time `now` (milliseconds since the epoch, for timestamps).
  public mutating func update(_ event: Event, now: UInt64) -> [Effect] {
    self.now = now
    var screen = ""
    var effects: [Effect] = []
    switch event {
    case .start:
      // Put the cursor on the bottom row, whatever row the shell left it on (what was on
      // the screen scrolls up into the terminal's history), then paint every row.
      screen += "\u{1B}[?7l" + String(repeating: "\r\n", count: size.rows - 1) + "\u{1B}[?2004h"
      drawn = []
      conversations[0].awaitingHistory = true
      effects.append(.openLog(.everyone))
    case .input(let bytes):
      handle(decoder.decode(bytes), into: &screen, effects: &effects)
    case .escapeTimeout:
      handle(decoder.flush(), into: &screen, effects: &effects)
    case .line(let line):
      show(line, into: &screen, effects: &effects)
    case .resize(let newSize):
      size = newSize
      screen += "\u{1B}[H\u{1B}[2J"
      drawn = []
    case .roster(let found, let connected, let inviting, let verified):
      roster.replace(found: found, connected: connected, inviting: inviting, verified: verified)
    case .restored(let id, let records):
      restore(id, records)
    case .redraw:
      screen += "\u{1B}[?7l\u{1B}[?2004h\u{1B}[H\u{1B}[2J"
      drawn = []
    case .finish:
      let layout = screenLayout
      screen += cursorTo(row: layout.logRows + 1, column: 1) + "\u{1B}[J\u{1B}[0m\u{1B}[?2004l\u{1B}[?7h\u{1B}[?25h"
      return [.write(screen)] + effects
    }
    present(into: &screen)
    return screen.isEmpty ? effects : [.write(screen)] + effects
  }

  /// The index of a conversation, opened (at the end, its history asked for) if needed.
  mutating func conversation(_ id: Conversation.ID, peer: Peer?, effects: inout [Effect]) -> Int {
    if let index = conversations.firstIndex(where: { $0.id == id }) { return index }
    var conversation = Conversation(
      id: id, title: peer?.name.value ?? "all", peer: peer, capacity: settings.scrollback, byteCapacity: settings.scrollbackBytes)
    conversation.awaitingHistory = true
    conversations.append(conversation)
    effects.append(.openLog(id))
    return conversations.count - 1
  }

  /// Shows another conversation: the one left is read up to here, the one shown gets an
  /// unread marker before what arrived since it was last shown.
  mutating func switchTo(_ index: Int) {
    guard index != current, conversations.indices.contains(index) else { return }
    if case .searching = mode { mode = .editing }
    conversations[current].hide()
    current = index
    conversations[current].show()
  }

  func cursorTo(row: Int, column: Int) -> String { "\u{1B}[\(row);\(column)H" }
}
