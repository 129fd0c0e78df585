/// Our own messages, from sending until every recipient has answered, in one place: the
/// session's delivery reports and the wait for pending deliveries come from here.
///
/// Message ids are given out in order, so the ledger is a ring indexed by `id - base`: no
/// hashing on the per-message path. Settled entries are kept for a while (the last
/// ``retainedSettled``) so a report can still be read shortly after; an entry that stays
/// pending holds the ones after it, up to ``maximumEntries``, beyond which the oldest is
/// forgotten.
package struct DeliveryLedger: Sendable {
  struct Entry: Sendable {
    var pending: Int32
    var delivered: Int32
    /// Every peer the message was for, until they have all answered (then emptied: a
    /// message to everyone in a large federation names a thousand peers, and the settled
    /// entries kept would hold them all).
    var recipients: [PeerID]
    var failures: [DeliveryFailure]
  }

  package let retainedSettled: Int
  package let maximumEntries: Int
  private var base: UInt64 = 0
  private var entries = RingBuffer<Entry>()
  /// Entries whose `pending` is above zero.
  package private(set) var pendingMessages = 0

  package init(retainedSettled: Int = 1024, maximumEntries: Int = 1 << 20) {
    self.retainedSettled = retainedSettled
    self.maximumEntries = maximumEntries
  }

  /// Records a message sent to the peers in `answering`, each of which will answer, and to
  /// those in `failures`, which already failed.
  /// - Returns: its report when it is already complete (nobody to wait for).
  package mutating func record(_ id: UInt64, answering: [PeerID], failures: [DeliveryFailure] = []) -> DeliveryReport? {
    if entries.isEmpty { base = id }
    guard id >= base else { return nil }
    // Ids are consecutive; a gap (ids taken by messages never sent) is filled with settled entries.
    while base &+ UInt64(entries.count) < id { entries.append(Entry(pending: 0, delivered: 0, recipients: [], failures: [])) }
    let pending = Int32(answering.count)
    let recipients = failures.isEmpty ? answering : answering + failures.map(\.peerID)
    entries.append(Entry(pending: pending, delivered: 0, recipients: recipients, failures: failures))
    if pending > 0 { pendingMessages += 1 }
    trim()
    return pending > 0 ? nil : report(id)
  }

  /// A recipient confirmed the message. - Returns: whether that settled it (every recipient
  /// has answered).
  package mutating func delivered(_ id: UInt64) -> Bool {
    update(id) { $0.delivered += 1 }
  }

  /// A recipient did not get the message. - Returns: whether that settled it.
  package mutating func failed(_ id: UInt64, _ failure: DeliveryFailure) -> Bool {
    update(id) { $0.failures.append(failure) }
  }

  /// What is known of a message: `nil` when it is not ours or was forgotten.
  package func report(_ id: UInt64) -> DeliveryReport? {
    guard let index = index(id) else { return nil }
    let entry = entries[index]
    return DeliveryReport(
      messageID: MessageID(rawValue: id), recipients: Int(entry.pending) + Int(entry.delivered) + entry.failures.count,
      delivered: Int(entry.delivered), failures: entry.failures)
  }

  /// Every peer a message was for, in the order it was recorded (those that answer, then
  /// those that failed at once), while one of them has yet to answer: `nil` when it is not
  /// ours, or all have answered (unless none was waited for), or it was forgotten.
  package func recipients(_ id: UInt64) -> [PeerID]? {
    guard let index = index(id), !entries[index].recipients.isEmpty else { return nil }
    return entries[index].recipients
  }

  private func index(_ id: UInt64) -> Int? {
    guard !entries.isEmpty, id >= base, id - base < UInt64(entries.count) else { return nil }
    return Int(id - base)
  }

  private mutating func update(_ id: UInt64, _ change: (inout Entry) -> Void) -> Bool {
    guard let index = index(id), let settled = Self.answer(&entries[index], change), settled else { return false }
    pendingMessages -= 1
    // The settled entry stays (trimmed later, after the retained ones).
    if entries.count > retainedSettled + 64 { trim() }
    return true
  }

  /// One recipient answered (`change` says how), in place. - Returns: whether that settled
  /// the entry; `nil` if it was settled already.
  private static func answer(_ entry: inout Entry, _ change: (inout Entry) -> Void) -> Bool? {
    guard entry.pending > 0 else { return nil }
    entry.pending -= 1
    change(&entry)
    guard entry.pending == 0 else { return false }
    entry.recipients = []
    return true
  }

  /// Forgets settled entries beyond the retained ones, and the oldest beyond the maximum.
  private mutating func trim() {
    // The oldest entry's count is read where it lies: `entries.first` copied the entry, a
    // retain and a release of its two arrays, for every entry trimmed (about one per message).
    while entries.count > retainedSettled, let pending = entries.first({ $0.pending }), pending == 0 || entries.count > maximumEntries {
      if pending > 0 { pendingMessages -= 1 }
      entries.popFirst()
      base &+= 1
    }
  }
}
