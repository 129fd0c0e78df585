import NearbyChat

/// The text being typed and the cursor in it, with Emacs-style editing.
///
/// The cursor counts grapheme clusters (`Character`s), so it never lands inside a
/// multi-byte or combined character; ``DisplayWidth`` turns positions into columns.
public struct LineEditor: Hashable, Sendable {
  /// The characters of the line.
  public private(set) var characters: [Character] = []
  /// Where the cursor is: 0 before the first character, `characters.count` at the end.
  public private(set) var cursor = 0
  /// The text the last kill command removed (Ctrl-Y inserts it).
  public private(set) var killed = ""
  /// The most UTF-8 bytes a line may have; typing or pasting beyond it is cut.
  public let maximumBytes: Int

  public init(_ text: String = "", maximumBytes: Int = 64 * 1024) {
    self.maximumBytes = maximumBytes
    characters = Array(text)
    cursor = characters.count
  }

  /// The line.
  public var text: String { String(characters) }
  public var isEmpty: Bool { characters.isEmpty }

  /// Replaces the line and puts the cursor at its end.
  public mutating func set(_ text: String) {
    characters = Array(text)
    cursor = characters.count
  }

  /// Replaces the characters in `range` with `text` and puts the cursor after it.
  public mutating func replace(_ range: Range<Int>, with text: String) {
    let prefix = String(characters[..<range.lowerBound]) + text
    let whole = prefix + String(characters[range.upperBound...])
    characters = Array(whole)
    cursor = min(Array(prefix).count, characters.count)
  }

  /// Inserts text at the cursor (cut to ``maximumBytes``). - Returns: false if nothing fit.
  @discardableResult
  public mutating func insert(_ text: String) -> Bool {
    let room = maximumBytes - String(characters).utf8.count
    var fitting = ""
    var used = 0
    for character in text {
      let size = character.utf8.count
      if used + size > room { break }
      fitting.append(character)
      used += size
    }
    guard !fitting.isEmpty else { return false }
    replace(cursor..<cursor, with: fitting)
    return true
  }

  public mutating func moveLeft() { cursor = max(0, cursor - 1) }
  public mutating func moveRight() { cursor = min(characters.count, cursor + 1) }
  public mutating func moveHome() { cursor = 0 }
  public mutating func moveEnd() { cursor = characters.count }

  /// Moves to the start of the word before the cursor (words are letters and digits).
  public mutating func moveWordLeft() { cursor = wordStart(before: cursor) }
  /// Moves to the end of the word after the cursor.
  public mutating func moveWordRight() { cursor = wordEnd(after: cursor) }

  /// Backspace. - Returns: false at the start of the line.
  @discardableResult
  public mutating func deleteBackward() -> Bool {
    guard cursor > 0 else { return false }
    characters.remove(at: cursor - 1)
    cursor -= 1
    return true
  }

  /// Delete. - Returns: false at the end of the line.
  @discardableResult
  public mutating func deleteForward() -> Bool {
    guard cursor < characters.count else { return false }
    characters.remove(at: cursor)
    return true
  }

  /// Ctrl-U.
  public mutating func killToStart() { kill(0..<cursor) }
  /// Ctrl-K.
  public mutating func killToEnd() { kill(cursor..<characters.count) }

  /// Ctrl-W: deletes back to the previous whitespace (the shell's word rubout).
  public mutating func killWordBackward() {
    var start = cursor
    while start > 0, characters[start - 1].isWhitespace { start -= 1 }
    while start > 0, !characters[start - 1].isWhitespace { start -= 1 }
    kill(start..<cursor)
  }

  /// Alt-D: deletes to the end of the next word.
  public mutating func killWordForward() { kill(cursor..<wordEnd(after: cursor)) }

  /// Ctrl-Y.
  public mutating func yank() { insert(killed) }

  /// Empties the line (after Enter); the kill buffer stays.
  public mutating func clear() {
    characters.removeAll()
    cursor = 0
  }

  private mutating func kill(_ range: Range<Int>) {
    guard !range.isEmpty else { return }
    killed = String(characters[range])
    characters.removeSubrange(range)
    cursor = range.lowerBound
  }

  static func isWordCharacter(_ character: Character) -> Bool {
    character.isLetter || character.isNumber || character == "_"
  }

  private func wordStart(before position: Int) -> Int {
    var index = position
    while index > 0, !Self.isWordCharacter(characters[index - 1]) { index -= 1 }
    while index > 0, Self.isWordCharacter(characters[index - 1]) { index -= 1 }
    return index
  }

  private func wordEnd(after position: Int) -> Int {
    var index = position
    while index < characters.count, !Self.isWordCharacter(characters[index]) { index += 1 }
    while index < characters.count, Self.isWordCharacter(characters[index]) { index += 1 }
    return index
  }
}
