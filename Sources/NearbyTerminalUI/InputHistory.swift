/// The lines typed before, for Up and Down.
///
/// Navigation works like a shell's: Up from the line being typed keeps it as a draft, and
/// Down past the newest entry brings the draft back.
public struct InputHistory: Equatable, Sendable {
  /// Oldest first.
  public private(set) var entries: [String]
  /// How many entries are kept; older ones are forgotten.
  public let capacity: Int
  /// The entry shown, or `entries.count` for the draft.
  private var position: Int
  private var draft = ""

  public init(_ entries: [String] = [], capacity: Int = 1000) {
    self.capacity = max(1, capacity)
    self.entries = Array(entries.suffix(self.capacity))
    position = self.entries.count
  }

  /// Remembers a submitted line (not an empty one, nor a repeat of the newest) and goes back
  /// to the draft position. - Returns: whether the line was added.
  @discardableResult
  public mutating func add(_ line: String) -> Bool {
    defer {
      position = entries.count
      draft = ""
    }
    guard !line.allSatisfy(\.isWhitespace), entries.last != line else { return false }
    entries.append(line)
    if entries.count > capacity { entries.removeFirst(entries.count - capacity) }
    return true
  }

  /// Goes back to the draft position with an empty draft (the line was cleared).
  public mutating func resetNavigation() {
    position = entries.count
    draft = ""
  }

  /// The entry before the one shown. - Parameter current: the line as it is now (kept
  /// when it is the draft). - Returns: nil at the oldest entry.
  public mutating func previous(current: String) -> String? {
    guard position > 0 else { return nil }
    if position == entries.count { draft = current }
    position -= 1
    return entries[position]
  }

  /// The entry after the one shown, or the draft after the newest. - Returns: nil when the
  /// draft is already shown.
  public mutating func next() -> String? {
    guard position < entries.count else { return nil }
    position += 1
    return position == entries.count ? draft : entries[position]
  }
}
