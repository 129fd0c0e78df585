/// Our messages on one session that its peer has not acknowledged yet, oldest first.
///
/// For a session that can resume (PROTOCOL.md 6.5) the window keeps each message whole, so
/// that what the peer did not receive can be sent again on the next connection; it is
/// bounded by ``byteCount`` (the session stops taking messages for the peer beyond its
/// limit). Otherwise it keeps only the ids, to report them failed when the connection ends.
/// Acknowledgements come in order, so removing the oldest is the common case and O(1).
package struct ResendWindow: Sendable {
  struct Entry: Sendable {
    let id: UInt64
    var message: Frame.Message?
    /// Acknowledged out of order: kept in place (ids stay sorted for the search) until it
    /// reaches the front.
    var isGone = false
  }

  private var entries = RingBuffer<Entry>()
  /// The entries not gone.
  private var live = 0
  /// Keep whole messages (the session can resume) or only their ids.
  package var keepsMessages = false
  /// The memory the kept messages hold, roughly: body, recipients and a fixed overhead each.
  package private(set) var byteCount = 0

  package init() {}

  package var count: Int { live }
  /// Entries held, those that went included (for tests of their bound).
  package var storedEntries: Int { entries.count }
  package var isEmpty: Bool { live == 0 }

  /// The cost of keeping `message` in a window.
  package static func cost(of message: Frame.Message) -> Int { message.body.count + 16 * message.recipients.count + 64 }

  /// A message was sent (or, while the session has no connection, is to be sent).
  ///
  /// Usually the newest: it goes last. An older one (a relay's window gets an earlier
  /// message again when its recipient is found behind it) goes in its place, so that the
  /// window stays sorted by id for ``remove(_:)``.
  package mutating func append(_ message: Frame.Message) {
    if keepsMessages {
      entries.append(Entry(id: message.id, message: message))
      byteCount += Self.cost(of: message)
    } else {
      entries.append(Entry(id: message.id, message: nil))
    }
    live += 1
    var position = entries.count - 1
    while position > 0, !SerialNumber.isAtOrBefore(entries[position - 1].id, message.id) {
      entries.swapAt(position - 1, position)
      position -= 1
    }
  }

  /// The peer acknowledged (or failed) a message. - Returns: whether it was waiting.
  ///
  /// The oldest in O(1); another by binary search (ids grow by one per message, so the
  /// window is sorted by serial distance from its first). Searching and shifting was
  /// O(window) per id: a DELIVERED of 8 192 ids, newest first, over a window of a hundred
  /// thousand small messages cost a billion steps of the session's thread.
  @discardableResult
  package mutating func remove(_ id: UInt64) -> Bool {
    guard let firstID = entries.first({ $0.id }) else { return false }
    if firstID == id {
      release(entries.popFirst()!)
      live -= 1
      dropGoneFront()
      return true
    }
    let target = id &- firstID
    guard target < 1 << 63 else { return false }  // before the oldest
    var low = 1
    var high = entries.count - 1
    while low <= high {
      let middle = (low + high) / 2
      let distance = entries[middle].id &- firstID
      if distance == target {
        // The id may be there more than once (gone, and added again), side by side.
        var found = middle
        while found > 0, entries[found].isGone, entries[found - 1].id == id { found -= 1 }
        if entries[found].isGone {
          found = middle
          while found < entries.count - 1, entries[found].isGone, entries[found + 1].id == id { found += 1 }
        }
        guard !entries[found].isGone else { return false }
        release(entries[found])
        entries[found].message = nil
        entries[found].isGone = true
        live -= 1
        if found == 0 { dropGoneFront() }
        dropGoneEntriesIfMany()
        return true
      }
      if distance < target { low = middle + 1 } else { high = middle - 1 }
    }
    return false
  }

  /// Empties the window. - Returns: the ids, oldest first.
  package mutating func removeAll() -> [UInt64] {
    byteCount = 0
    live = 0
    return entries.removeAll().filter { !$0.isGone }.map(\.id)
  }

  /// Removes the messages up to and including `id` (serial order: ids grow by one per
  /// message, wrapping). - Returns: their ids, oldest first.
  package mutating func removeThrough(_ id: UInt64) -> [UInt64] {
    var removed: [UInt64] = []
    while let firstID = entries.first({ $0.id }), SerialNumber.isAtOrBefore(firstID, id) {
      let entry = entries.popFirst()!
      guard !entry.isGone else { continue }
      release(entry)
      live -= 1
      removed.append(firstID)
    }
    dropGoneFront()
    return removed
  }

  /// The kept messages after `id` (all of them when `id` is nil), oldest first: what a peer
  /// that received up to `id` is missing.
  package func messages(after id: UInt64?) -> [Frame.Message] {
    var result: [Frame.Message] = []
    for offset in 0..<entries.count {
      let entry = entries[offset]
      if let id, SerialNumber.isAtOrBefore(entry.id, id) { continue }
      if let message = entry.message { result.append(message) }
    }
    return result
  }

  /// The front is never an entry that went (the search starts from the first id).
  private mutating func dropGoneFront() {
    while entries.first({ $0.isGone }) == true { _ = entries.popFirst() }
  }

  /// Entries that went stay until the front reaches them: behind a first message never
  /// acknowledged they would pile up (one per message sent, never counted in
  /// ``byteCount``), so once they outnumber the others they go, in one pass.
  private mutating func dropGoneEntriesIfMany() {
    guard entries.count - live > 2 * live + 64 else { return }
    for entry in entries.removeAll() where !entry.isGone { entries.append(entry) }
  }

  private mutating func release(_ entry: Entry) {
    if let message = entry.message { byteCount -= Self.cost(of: message) }
  }
}

/// Message ids compared as serial numbers (RFC 1982): a sender's ids grow by one per
/// message and wrap from 2⁶⁴−1 to 0, so `a` is at or before `b` when `b` is less than 2⁶³
/// ahead of it.
package enum SerialNumber {
  package static func isAtOrBefore(_ a: UInt64, _ b: UInt64) -> Bool { b &- a < 1 << 63 }
}
