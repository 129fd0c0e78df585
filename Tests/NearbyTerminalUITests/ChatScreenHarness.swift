import NearbyChat

@testable import Nearby
@testable import NearbyCore
@testable import NearbyTerminalUI

/// Peers, events and chat lines for the tests.
enum Fixtures {
  static let alice = peer("alice", 0xA11CE)
  static let bob = peer("bob", 0xB0B)
  static let carol = peer("carol", 0xCA201)

  static func peer(_ name: String, _ low: UInt64) -> Peer {
    Peer(id: PeerID(high: 0x1234_5678_9ABC_DEF0, low: low), name: try! DisplayName(name))
  }

  static func found(_ peer: Peer) -> ChatLine {
    .event(.found(DiscoveredPeer(advertisement: PeerAdvertisement(peer: peer), hostName: "\(peer.name.value).local.", endpoints: [])))
  }

  static func message(_ text: String, from peer: Peer, isPrivate: Bool = false) -> ChatLine {
    .event(.message(ReceivedMessage(id: 7, from: peer, isPrivate: isPrivate, timestamp: 0, body: Array(text.utf8))))
  }

  static func invitation(from peer: Peer, context: String = "") -> ChatLine {
    .event(
      .invitation(
        Invitation(connection: ConnectionID(1), invitationID: 1, peer: peer, context: Array(context.utf8), expiresAt: .seconds(30))))
  }

  /// 12:34:56 UTC on some day, in milliseconds (timestamps are local time: tests only look
  /// at their shape).
  static let noon: UInt64 = 1_700_000_000_000
}

/// A ``TerminalChatModel`` wired to a ``VirtualTerminal``: what the model writes lands on
/// the virtual screen; the other effects are collected.
struct ChatScreenHarness {
  var model: TerminalChatModel
  var terminal: VirtualTerminal
  var effects: [TerminalChatModel.Effect] = []
  /// What the model asked to keep in history files (not in `effects`).
  var logged: [(conversation: Conversation.ID, record: LogRecord)] = []
  /// The effects of the start (the history file of "all" asked for, and answered: empty).
  var startEffects: [TerminalChatModel.Effect] = []
  var written = ""
  var now = Fixtures.noon

  init(
    columns: Int = 60, rows: Int = 12, color: Bool = false, bell: Bool = true, scrollback: Int = 10_000,
    scrollbackBytes: Int = Conversation.defaultByteCapacity, history: [String] = [], me: Peer = Fixtures.alice
  ) {
    model = TerminalChatModel(
      me: me, size: .init(columns: columns, rows: rows),
      settings: .init(color: color, bell: bell, scrollback: scrollback, scrollbackBytes: scrollbackBytes), history: history)
    terminal = VirtualTerminal(columns: columns, rows: rows)
    // A shell prompt and a command line were there before, as in a real terminal.
    terminal.write("$ nearby chat\r\n")
    send(.start)
    startEffects = effects
    answerLogRequests()
  }

  mutating func send(_ event: TerminalChatModel.Event) {
    now += 1000
    for effect in model.update(event, now: now) {
      if case .write(let text) = effect {
        terminal.write(text)
        written += text
      } else if case .log(let id, let record) = effect {
        logged.append((id, record))
      } else {
        effects.append(effect)
      }
    }
  }

  mutating func type(_ text: String) { send(.input(Array(text.utf8))) }
  mutating func type(bytes: [UInt8]) { send(.input(bytes)) }
  mutating func receive(_ line: ChatLine) { send(.line(line)) }

  mutating func resize(columns: Int, rows: Int) {
    terminal.resize(columns: columns, rows: rows)
    send(.resize(.init(columns: columns, rows: rows)))
  }

  /// The effects other than submitted lines and history records (and forgets them).
  mutating func takeEffects() -> [TerminalChatModel.Effect] {
    defer { effects.removeAll() }
    return effects
  }

  /// Answers the model's requests for history files with `records` for the conversation
  /// (and none for the others).
  mutating func answerLogRequests(_ records: [Conversation.ID: [LogRecord]] = [:]) {
    let requests = effects.compactMap { effect -> Conversation.ID? in
      if case .openLog(let id) = effect { return id }
      return nil
    }
    effects.removeAll { if case .openLog = $0 { return true } else { return false } }
    for id in requests { send(.restored(id, records[id] ?? [])) }
  }

  /// The submitted lines so far (and forgets them).
  mutating func takeSubmitted() -> [String] {
    let lines = effects.compactMap { effect -> String? in
      if case .submit(let line) = effect { return line }
      return nil
    }
    effects.removeAll { if case .submit = $0 { return true } else { return false } }
    return lines
  }

  var screen: [String] { terminal.lines }
  var shown: Conversation { model.shown }
  /// The rows of the log (above the status bar), without timestamps.
  var log: [String] { Array(terminal.lines.dropLast(model.inputView.rows.count + 1)).map(Self.untimed) }
  /// The log's rows that are not blank.
  var logContent: [String] { log.filter { !$0.isEmpty } }
  /// The status bar (the row above the input line).
  var statusBar: String { terminal.lines[terminal.lines.count - model.inputView.rows.count - 1] }
  var lastRow: String { terminal.lines.last! }
  /// The cursor on the virtual screen (0-based).
  var cursor: (row: Int, column: Int) { (terminal.row, terminal.column) }

  /// A screen line without its `[hh:mm:ss] ` timestamp.
  static func untimed(_ line: String) -> String {
    guard line.hasPrefix("["), line.count >= 11, Array(line)[9] == "]" else { return line }
    return String(line.dropFirst(11))
  }

  var untimedContent: [String] { terminal.content.map(Self.untimed) }
}

/// Escape sequences as a terminal sends them.
enum Keys {
  static let left = "\u{1B}[D"
  static let right = "\u{1B}[C"
  static let up = "\u{1B}[A"
  static let down = "\u{1B}[B"
  static let home = "\u{1B}[H"
  static let end = "\u{1B}[F"
  static let delete = "\u{1B}[3~"
  static let ctrlLeft = "\u{1B}[1;5D"
  static let ctrlRight = "\u{1B}[1;5C"
  static let altB = "\u{1B}b"
  static let altF = "\u{1B}f"
  static let enter = "\r"
  static let tab = "\t"
  static let backspace = "\u{7F}"
  static let pageUp = "\u{1B}[5~"
  static let pageDown = "\u{1B}[6~"
  static let altLeft = "\u{1B}[1;3D"
  static let altRight = "\u{1B}[1;3C"
  static func alt(_ character: Character) -> String { "\u{1B}" + String(character) }
  static func paste(_ text: String) -> String { "\u{1B}[200~" + text + "\u{1B}[201~" }
  static func ctrl(_ letter: Character) -> String {
    String(UnicodeScalar(letter.asciiValue! & 0x1F))
  }
}
