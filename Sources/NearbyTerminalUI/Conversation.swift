import Nearby

/// One conversation of the terminal chat: the one with everyone, or the private one with a
/// peer. It keeps its own bounded log, where the view of it is scrolled to, and what is
/// unread.
///
/// Entries are numbered by serial: the serial of an entry never changes while it is kept,
/// also when older ones are forgotten or history is put in front of them, so positions in
/// the log (the scroll position, the unread marker, a search match) stay valid.
public struct Conversation: Sendable {
  public enum ID: Hashable, Sendable {
    case everyone
    case peer(PeerID)
  }

  public let id: ID
  /// What the status bar and the prompt call it: `all`, or the peer's name.
  public internal(set) var title: String
  /// The peer of a private conversation (nil for the one with everyone).
  public internal(set) var peer: Peer?
  /// The lines, oldest first (at most `capacity`, and about `byteCapacity` of text).
  public private(set) var entries: [ScreenEntry] = []
  /// The serial of `entries[0]`.
  public private(set) var firstSerial = 0
  /// How many entries are kept; older ones are forgotten.
  public let capacity: Int
  /// How much text the entries may hold together (``ScreenEntry/byteCount``); older ones are
  /// forgotten beyond it, the newest always kept. Lines of a chat between people hit
  /// `capacity` first; this bounds what long messages can take.
  public let byteCapacity: Int
  /// The text the entries hold now.
  public private(set) var byteCount = 0
  /// The bottom row of the view, or nil while the view follows the newest line.
  public internal(set) var scroll: ScrollPosition?
  /// Lines that arrived below the view while it was scrolled up.
  public internal(set) var newBelow = 0
  /// Messages that arrived while the conversation was not shown.
  public internal(set) var unread = 0
  /// A private message or a mention of our name is among the unread ones.
  public internal(set) var alert = false
  /// The serial after the last line read (where the unread marker goes on coming back).
  var readEnd = 0
  /// The serial of the first line that was unread when the conversation was shown again.
  var markerBefore: Int?
  /// The serial of the search match the view shows.
  var match: Int?
  /// Its history file was asked for and has not come yet.
  var awaitingHistory = false
  /// The entries' rows as wrapped for the screen.
  let wrapCache = WrapCache()

  public init(id: ID, title: String, peer: Peer? = nil, capacity: Int, byteCapacity: Int = Conversation.defaultByteCapacity) {
    self.id = id
    self.title = title
    self.peer = peer
    self.capacity = max(1, capacity)
    self.byteCapacity = max(1, byteCapacity)
  }

  /// 4 MiB of text: hundreds of the longest messages shown (``ChatLineStyler/maximumMessageBytes``).
  public static let defaultByteCapacity = 4 << 20

  /// One past the newest serial.
  public var endSerial: Int { firstSerial + entries.count }

  public subscript(serial: Int) -> ScreenEntry {
    get { entries[serial - firstSerial] }
    set {
      byteCount += newValue.byteCount - entries[serial - firstSerial].byteCount
      entries[serial - firstSerial] = newValue
    }
  }

  public func contains(serial: Int) -> Bool { serial >= firstSerial && serial < endSerial }

  /// Adds a line at the end (forgetting the oldest beyond `capacity` and `byteCapacity`).
  /// - Returns: its serial.
  @discardableResult
  mutating func append(_ entry: ScreenEntry) -> Int {
    entries.append(entry)
    byteCount += entry.byteCount
    if scroll != nil { newBelow += 1 }
    var excess = max(0, entries.count - capacity)
    var bytes = byteCount
    for index in 0..<excess { bytes -= entries[index].byteCount }
    while bytes > byteCapacity, excess < entries.count - 1 {
      bytes -= entries[excess].byteCount
      excess += 1
    }
    if excess > 0 {
      byteCount = bytes
      entries.removeFirst(excess)
      firstSerial += excess
      if let position = scroll, position.serial < firstSerial { scroll = ScrollPosition(serial: firstSerial, row: 0) }
      if let marker = markerBefore, marker < firstSerial { markerBefore = firstSerial }
      if let found = match, found < firstSerial { match = nil }
    }
    return endSerial - 1
  }

  /// Puts older lines (from the history file) before the others, as many as fit.
  mutating func prepend(_ older: [ScreenEntry]) {
    let room = capacity - entries.count
    guard room > 0, !older.isEmpty else { return }
    var kept = older.suffix(room)
    var bytes = kept.reduce(0) { $0 + $1.byteCount }
    while let first = kept.first, byteCount + bytes > byteCapacity {
      bytes -= first.byteCount
      kept = kept.dropFirst()
    }
    entries.insert(contentsOf: kept, at: 0)
    byteCount += bytes
    firstSerial -= kept.count
  }

  /// The conversation is shown again: what arrived since is read now, with a marker before it
  /// (none when nothing comes before it: a new conversation is all new).
  mutating func show() {
    markerBefore = endSerial > readEnd && readEnd > firstSerial ? readEnd : nil
    unread = 0
    alert = false
  }

  /// The conversation is no longer shown: everything in it so far was read.
  mutating func hide() {
    readEnd = endSerial
    markerBefore = nil
  }

  /// The serial of the newest entry before `serial` (or from the end) whose text contains
  /// `term`, ignoring case.
  func match(_ term: String, before serial: Int? = nil) -> Int? {
    let needle = term.lowercased()
    var index = min(serial ?? endSerial, endSerial) - 1
    while index >= firstSerial {
      if self[index].line.plain.lowercased().contains(needle) { return index }
      index -= 1
    }
    return nil
  }

  /// The serial of the oldest entry after `serial` whose text contains `term`.
  func match(_ term: String, after serial: Int) -> Int? {
    let needle = term.lowercased()
    var index = max(serial + 1, firstSerial)
    while index < endSerial {
      if self[index].line.plain.lowercased().contains(needle) { return index }
      index += 1
    }
    return nil
  }
}

/// A row of a conversation's log: row `row` of the rows entry `serial` takes.
public struct ScrollPosition: Hashable, Comparable, Sendable {
  public var serial: Int
  public var row: Int

  public init(serial: Int, row: Int) {
    self.serial = serial
    self.row = row
  }

  public static func < (lhs: ScrollPosition, rhs: ScrollPosition) -> Bool { (lhs.serial, lhs.row) < (rhs.serial, rhs.row) }
}
