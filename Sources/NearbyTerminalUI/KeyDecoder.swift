/// Turns the bytes a terminal sends in raw mode into ``Key``s.
///
/// Bytes may arrive split anywhere (in the middle of a UTF-8 character or an escape
/// sequence): what is incomplete waits for the next call. A lone ESC cannot be told apart
/// from the start of a sequence, so the reader calls ``flush()`` when nothing follows it
/// for a moment. Unknown sequences and control characters are dropped, never inserted.
///
/// Text between the bracketed-paste markers (`ESC [200~` … `ESC [201~`) is one
/// ``Key/paste(_:)``, newlines included. Terminals without bracketed paste send a paste as
/// keys; several lines arriving in one read (which typing never does) become a paste too,
/// so a paste never turns into a flood of separate messages.
public struct KeyDecoder: Sendable {
  private var pending: [UInt8] = []
  private var lastWasCarriageReturn = false
  /// The bytes of a bracketed paste so far, while one is under way.
  private var paste: [UInt8]?

  /// The longest escape sequence kept waiting for its end; longer ones are garbage.
  static let maximumSequenceLength = 32
  /// The most bytes of one paste kept; the rest is dropped.
  static let maximumPasteBytes = 1 << 20
  static let pasteStart = Array("\u{1B}[200~".utf8)
  static let pasteEnd = Array("\u{1B}[201~".utf8)

  public init() {}

  /// Whether an incomplete escape sequence waits for more bytes (the reader then calls
  /// ``flush()`` after a short timeout). A paste under way waits for its end marker instead.
  public var isWaiting: Bool { !pending.isEmpty && paste == nil }

  /// Decodes `bytes` (after whatever an earlier call left incomplete).
  public mutating func decode(_ bytes: some Sequence<UInt8>) -> [Key] {
    pending.append(contentsOf: bytes)
    var keys: [Key] = []
    var index = 0
    while index < pending.count {
      if paste != nil {
        guard let end = continuePaste(from: index, into: &keys) else {
          index = pending.count - Self.partialMarkerLength(pending[index...])
          break
        }
        index = end
        continue
      }
      let byte = pending[index]
      if byte == 0x0A, lastWasCarriageReturn {  // CR LF is one Enter
        lastWasCarriageReturn = false
        index += 1
        continue
      }
      lastWasCarriageReturn = byte == 0x0D
      if byte == 0x1B {
        guard let (key, length) = escapeSequence(at: index) else { break }
        if pending[index..<(index + length)].elementsEqual(Self.pasteStart) { paste = [] }
        if let key { keys.append(key) }
        index += length
      } else if byte < 0x20 || byte == 0x7F {
        if let key = Self.control(byte) { keys.append(key) }
        index += 1
      } else {
        let (text, end) = textRun(from: index)
        if end == index { break }  // an incomplete UTF-8 character at the end
        if !text.isEmpty { Self.appendText(text, to: &keys) }
        index = end
      }
    }
    pending.removeFirst(index)
    return Self.coalescingLines(keys)
  }

  /// Takes paste bytes from `index` up to the end marker. - Returns: the index after the
  /// marker (the paste is then complete, and in `keys`), or nil when the marker has not come.
  private mutating func continuePaste(from index: Int, into keys: inout [Key]) -> Int? {
    let marker = Self.pasteEnd
    var end = index
    while end + marker.count <= pending.count {
      if pending[end] == 0x1B && pending[end..<(end + marker.count)].elementsEqual(marker) {
        addToPaste(pending[index..<end])
        keys.append(.paste(Self.pasteText(paste ?? [])))
        paste = nil
        return end + marker.count
      }
      end += 1
    }
    addToPaste(pending[index..<(pending.count - Self.partialMarkerLength(pending[index...]))])
    return nil
  }

  private mutating func addToPaste(_ bytes: ArraySlice<UInt8>) {
    let room = Self.maximumPasteBytes - (paste?.count ?? 0)
    paste?.append(contentsOf: bytes.prefix(max(0, room)))
  }

  /// How many bytes at the end could be the start of the end marker.
  static func partialMarkerLength(_ bytes: ArraySlice<UInt8>) -> Int {
    for length in stride(from: min(pasteEnd.count - 1, bytes.count), to: 0, by: -1)
    where bytes.suffix(length).elementsEqual(pasteEnd.prefix(length)) {
      return length
    }
    return 0
  }

  /// The text of a paste: CR LF and CR become LF, a tab four spaces, other control
  /// characters are dropped.
  static func pasteText(_ bytes: [UInt8]) -> String {
    var text = ""
    var lastWasCR = false
    for scalar in String(decoding: bytes, as: UTF8.self).unicodeScalars {
      defer { lastWasCR = scalar == "\r" }
      switch scalar {
      case "\r": text += "\n"
      case "\n": if !lastWasCR { text += "\n" }
      case "\t": text += "    "
      case _ where scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value): break
      default: text.unicodeScalars.append(scalar)
      }
    }
    return text
  }

  /// Keys of one read where text follows an Enter: lines that arrived together, which only a
  /// paste does. From the first text on, Enter and Tab become text and the lot one paste.
  static func coalescingLines(_ keys: [Key]) -> [Key] {
    guard let firstEnter = keys.firstIndex(of: .enter),
      keys[(firstEnter + 1)...].contains(where: { if case .text = $0 { true } else { false } }),
      let firstText = keys.firstIndex(where: { if case .text = $0 { true } else { false } })
    else { return keys }
    var result = Array(keys[..<firstText])
    var pasted = ""
    for key in keys[firstText...] {
      switch key {
      case .text(let text): pasted += text
      case .enter: pasted += "\n"
      case .tab: pasted += "    "
      default:
        if !pasted.isEmpty { result.append(.paste(pasted)) }
        pasted = ""
        result.append(key)
      }
    }
    if !pasted.isEmpty { result.append(.paste(pasted)) }
    return result
  }

  /// Nothing followed an ESC (or a partial character) in time: it was the Escape key (the
  /// rest of the incomplete input is dropped).
  public mutating func flush() -> [Key] {
    guard paste == nil else { return [] }
    defer { pending.removeAll() }
    return pending.first == 0x1B ? [.escape] : []
  }

  static func appendText(_ text: String, to keys: inout [Key]) {
    if case .text(let previous)? = keys.last {
      keys[keys.count - 1] = .text(previous + text)
    } else {
      keys.append(.text(text))
    }
  }

  static func control(_ byte: UInt8) -> Key? {
    switch byte {
    case 0x01: .home
    case 0x02: .left
    case 0x03: .interrupt
    case 0x04: .endOfInput
    case 0x05: .end
    case 0x06: .right
    case 0x07: .escape
    case 0x08, 0x7F: .backspace
    case 0x09: .tab
    case 0x0A, 0x0D: .enter
    case 0x0B: .killToEnd
    case 0x0C: .redraw
    case 0x0E: .nextConversation
    case 0x10: .previousConversation
    case 0x12: .searchBackward
    case 0x13: .searchForward
    case 0x15: .killToStart
    case 0x17: .killWordBackward
    case 0x19: .yank
    case 0x1A: .suspend
    default: nil
    }
  }

  /// Printable UTF-8 from `start` up to the next control byte. - Returns: the text (C1
  /// controls and invalid bytes removed or replaced) and where it ends; `end == start` when
  /// only an incomplete character is there.
  private func textRun(from start: Int) -> (String, Int) {
    var end = start
    while end < pending.count, pending[end] >= 0x20, pending[end] != 0x7F { end += 1 }
    if end == pending.count { end = completeEnd(start, end) }
    if end == start { return ("", start) }
    var text = ""
    for scalar in String(decoding: pending[start..<end], as: UTF8.self).unicodeScalars where !(0x80...0x9F).contains(scalar.value) {
      text.unicodeScalars.append(scalar)
    }
    return (text, end)
  }

  /// Moves `end` back before a UTF-8 character that the bytes so far do not complete.
  private func completeEnd(_ start: Int, _ end: Int) -> Int {
    var lead = end - 1
    while lead >= start, lead > end - 4, pending[lead] & 0xC0 == 0x80 { lead -= 1 }
    guard lead >= start else { return end }
    let byte = pending[lead]
    let length = byte >= 0xF0 ? 4 : byte >= 0xE0 ? 3 : byte >= 0xC0 ? 2 : 1
    return byte < 0xF8 && end - lead < length ? lead : end
  }

  /// The key of the escape sequence at `start` and its length, nil when it is incomplete.
  private func escapeSequence(at start: Int) -> (Key?, Int)? {
    let available = pending.count - start
    guard available >= 2 else { return nil }
    let second = pending[start + 1]
    switch second {
    case UInt8(ascii: "["):
      var end = start + 2
      while end < pending.count, !(0x40...0x7E).contains(pending[end]) {
        guard (0x20...0x3F).contains(pending[end]) else { return (nil, end - start) }  // malformed: drop it
        end += 1
      }
      if end == pending.count { return available >= Self.maximumSequenceLength ? (nil, available) : nil }
      let parameters = String(decoding: pending[(start + 2)..<end], as: UTF8.self)
      return (Self.csiKey(parameters, final: pending[end]), end - start + 1)
    case UInt8(ascii: "O"):
      guard available >= 3 else { return nil }
      return (Self.csiKey("", final: pending[start + 2]), 3)
    case UInt8(ascii: "b"), UInt8(ascii: "B"): return (.wordLeft, 2)
    case UInt8(ascii: "f"), UInt8(ascii: "F"): return (.wordRight, 2)
    case UInt8(ascii: "d"), UInt8(ascii: "D"): return (.killWordForward, 2)
    case 0x7F, 0x08: return (.killWordBackward, 2)
    case UInt8(ascii: "0")...UInt8(ascii: "9"):
      let digit = Int(second - UInt8(ascii: "0"))
      return (.conversation(digit == 0 ? 10 : digit), 2)
    case 0x1B:
      // ESC ESC [ D: Alt-Left in terminals that prefix a key with ESC for Alt.
      guard available >= 3 else { return nil }
      guard pending[start + 2] == UInt8(ascii: "[") || pending[start + 2] == UInt8(ascii: "O") else { return (.escape, 1) }
      guard let (key, length) = escapeSequence(at: start + 1) else { return nil }
      switch key {
      case .left?, .wordLeft?: return (.previousConversation, length + 1)
      case .right?, .wordRight?: return (.nextConversation, length + 1)
      default: return (key, length + 1)
      }
    case 0x20..<0x7F: return (nil, 2)  // Alt with a key the chat does not use
    default: return (.escape, 1)  // a lone Escape followed by a control or non-ASCII byte
    }
  }

  /// CSI (`ESC [ params final`) and SS3 (`ESC O final`) keys. A modifier parameter turns
  /// arrows into word moves with Ctrl (`1;5D`: Ctrl-Left) and into conversation switches
  /// with Alt (`1;3C`: Alt-Right).
  static func csiKey(_ parameters: String, final: UInt8) -> Key? {
    // Parameters are small numbers; anything else (a sign, more digits than a key needs:
    // "-9223372036854775808" made `numbers[1] - 1` overflow) counts as 0.
    let numbers = parameters.split(separator: ";", omittingEmptySubsequences: false).map { part in
      part.utf8.count <= 6 && part.utf8.allSatisfy { (0x30...0x39).contains($0) } ? Int(part) ?? 0 : 0
    }
    let modifiers = numbers.count >= 2 ? max(0, numbers[1] - 1) : 0  // 1 Shift, 2 Alt, 4 Ctrl
    let modified = modifiers != 0
    let ctrl = modifiers & 4 != 0
    let alt = modifiers & 2 != 0
    switch final {
    case UInt8(ascii: "A"): return .up
    case UInt8(ascii: "B"): return .down
    case UInt8(ascii: "C"): return ctrl ? .wordRight : alt ? .nextConversation : modified ? .wordRight : .right
    case UInt8(ascii: "D"): return ctrl ? .wordLeft : alt ? .previousConversation : modified ? .wordLeft : .left
    case UInt8(ascii: "H"): return .home
    case UInt8(ascii: "F"): return .end
    case UInt8(ascii: "~"):
      switch numbers.first ?? 0 {
      case 1, 7: return .home
      case 4, 8: return .end
      case 3: return modified ? .killWordForward : .delete
      case 5: return .pageUp
      case 6: return .pageDown
      default: return nil
      }
    default: return nil
    }
  }
}
