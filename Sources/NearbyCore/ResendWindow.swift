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
    let message: Frame.Message?
  }

  private var entries = RingBuffer<Entry>()
  /// Keep whole messages (the session can resume) or only their ids.
  package var keepsMessages = false
  /// The memory the kept messages hold, roughly: body, recipients and a fixed overhead each.
  package private(set) var byteCount = 0

  package init() {}

  package var count: Int { entries.count }
  package var isEmpty: Bool { entries.isEmpty }

  /// The cost of keeping `message` in a window.
  package static func cost(of message: Frame.Message) -> Int { message.body.count + 16 * message.recipients.count + 64 }

  /// A message was sent (or, while the session has no connection, is to be sent).
  package mutating func append(_ message: Frame.Message) {
    if keepsMessages {
      entries.append(Entry(id: message.id, message: message))
      byteCount += Self.cost(of: message)
    } else {
      entries.append(Entry(id: message.id, message: nil))
    }
  }

  /// The peer acknowledged (or failed) a message. - Returns: whether it was waiting.
  @discardableResult
  package mutating func remove(_ id: UInt64) -> Bool {
    guard let firstID = entries.first({ $0.id }) else { return false }
    if firstID == id {
      release(entries.popFirst()!)
      return true
    }
    for offset in 1..<entries.count where entries[offset].id == id {
      let removed = entries[offset]
      var position = offset
      while position > 0 {
        entries[position] = entries[position - 1]
        position -= 1
      }
      entries.popFirst()
      release(removed)
      return true
    }
    return false
  }

  /// Empties the window. - Returns: the ids, oldest first.
  package mutating func removeAll() -> [UInt64] {
    byteCount = 0
    return entries.removeAll().map(\.id)
  }

  /// Removes the messages up to and including `id` (serial order: ids grow by one per
  /// message, wrapping). - Returns: their ids, oldest first.
  package mutating func removeThrough(_ id: UInt64) -> [UInt64] {
    var removed: [UInt64] = []
    while let firstID = entries.first({ $0.id }), SerialNumber.isAtOrBefore(firstID, id) {
      release(entries.popFirst()!)
      removed.append(firstID)
    }
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
