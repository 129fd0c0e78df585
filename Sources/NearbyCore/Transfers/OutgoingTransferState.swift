/// The sender's side of one transfer (PROTOCOL.md 13.3), as a value: it takes the receiver's
/// frames, what the shell has read and sent, and the time, and says what to send and read.
///
/// Files go one after another in index order, each from the offset the receiver gave. At
/// most ``window`` bytes of CHUNK data are unacknowledged at a time, so that a slow receiver
/// (or a relay's queue) holds bounded memory; RESEND, a new ACCEPT after a reconnection, and
/// a stall on a lossy route move a file back to what the receiver has.
package struct OutgoingTransferState: Sendable {
  package enum Phase: Hashable, Sendable {
    /// OFFER sent, no answer yet.
    case offered
    case sending
    case finished(TransferEnd)
  }

  package enum FileStatus: Hashable, Sendable {
    case unanswered
    case notWanted
    /// Wanted, its turn has not come.
    case queued
    /// Its chunks are going out.
    case sending
    /// END sent; waiting for VERIFIED.
    case ended
    case verified
  }

  package enum Action: Hashable, Sendable {
    case send(TransferFrame.Body)
    /// Read file `index` from `offset` on; whatever was read ahead is stale.
    case read(index: Int, offset: UInt64)
    /// The receiver has more: report progress.
    case progress
    /// The receiver verified file `index`.
    case fileVerified(Int)
    case finished(TransferEnd)
  }

  package let id: TransferID
  package let peer: PeerID
  package let files: [OfferedFile]
  package private(set) var phase = Phase.offered
  package private(set) var status: [FileStatus]
  /// Per file: what the receiver has (its last ACK, or the ACCEPT's offset).
  package private(set) var acknowledged: [UInt64]
  /// Per file: the next byte to send.
  package private(set) var nextOffset: [UInt64]
  /// The file whose chunks go out now.
  package private(set) var current: Int?
  /// No route to the receiver: nothing is sent until it answers a new OFFER.
  package private(set) var paused = false
  /// The most CHUNK bytes not yet acknowledged.
  package var window: UInt64
  /// Every CHUNK byte sent, resent ones included.
  package private(set) var bytesSent: UInt64 = 0
  private var lastProgress: Duration

  package init(id: TransferID, peer: PeerID, files: [OfferedFile], window: UInt64, now: Duration) {
    self.id = id
    self.peer = peer
    self.files = files
    self.window = window
    status = Array(repeating: .unanswered, count: files.count)
    acknowledged = Array(repeating: 0, count: files.count)
    nextOffset = Array(repeating: 0, count: files.count)
    lastProgress = now
  }

  package var isFinished: Bool { if case .finished = phase { true } else { false } }

  /// The OFFER to send (first, and again on every new route to the receiver).
  package var offer: TransferFrame.Body { .offer(files) }

  /// Files the receiver wants (all of them before it answered).
  package var wanted: [Int] {
    files.indices.filter { status[$0] != .notWanted && !files[$0].isDirectory }
  }

  /// Bytes of the wanted files, and how many the receiver has.
  package var totals: (bytes: UInt64, done: UInt64) {
    var total: UInt64 = 0
    var done: UInt64 = 0
    for index in wanted {
      total += files[index].size
      done += status[index] == .verified ? files[index].size : acknowledged[index]
    }
    return (total, done)
  }

  package var verifiedCount: Int { status.filter { $0 == .verified }.count }

  /// CHUNK bytes sent and not acknowledged.
  package var inFlight: UInt64 {
    var total: UInt64 = 0
    for index in files.indices where status[index] == .sending || status[index] == .ended {
      total += nextOffset[index] &- min(acknowledged[index], nextOffset[index])
    }
    return total
  }

  // MARK: What the shell sends

  /// Whether a chunk of `count` bytes of file `index` at `offset` is the next to go now.
  package func mayStart(index: Int, offset: UInt64) -> Bool {
    phase == .sending && !paused && current == index && nextOffset[index] == offset
  }

  /// Whether the window has room for `count` more bytes (a chunk always fits an empty window).
  package func windowHasRoom(for count: Int) -> Bool {
    let flying = inFlight
    return flying == 0 || flying + UInt64(count) <= window
  }

  /// The shell queued the chunk ``mayStart(index:offset:)`` allowed.
  package mutating func sent(index: Int, count: Int) {
    nextOffset[index] += UInt64(count)
    bytesSent += UInt64(count)
  }

  /// The reader reached the end of file `index` and every chunk of it is sent: END goes out
  /// and the next file starts.
  /// - Returns: nothing when the file is not complete (the shell sends the rest first).
  package mutating func fileRead(index: Int, hash: [UInt8], into actions: inout [Action]) {
    guard phase == .sending, !paused, current == index, nextOffset[index] == files[index].size else { return }
    status[index] = .ended
    actions.append(.send(.end(index: UInt16(index), size: files[index].size, hash: hash)))
    current = nil
    advance(into: &actions)
  }

  /// The reader found that file `index` is not what was offered (or cannot be read).
  package mutating func readFailed(_ message: String, into actions: inout [Action]) {
    fail(.readFailed, message, into: &actions)
  }

  // MARK: Frames from the receiver

  package mutating func receive(_ body: TransferFrame.Body, now: Duration, into actions: inout [Action]) {
    guard !isFinished else { return }
    switch body {
    case .accept(let accepted):
      accept(accepted, now: now, into: &actions)
    case .ack(let index, let offset):
      guard phase == .sending else { return }
      guard let index = valid(index), offset <= files[index].size else { return invalid("an ACK outside the offer", &actions) }
      guard status[index] == .sending || status[index] == .ended, offset > acknowledged[index] else { return }
      acknowledged[index] = min(offset, nextOffset[index])
      lastProgress = now
      actions.append(.progress)
    case .resend(let index, let offset):
      guard phase == .sending else { return }
      guard let index = valid(index), offset <= files[index].size else { return invalid("a RESEND outside the offer", &actions) }
      guard !paused, status[index] == .sending || status[index] == .ended, offset < nextOffset[index] else { return }
      rewind(to: index, offset: offset, now: now, into: &actions)
    case .verified(let index):
      guard phase == .sending else { return }
      guard let index = valid(index) else { return invalid("a VERIFIED outside the offer", &actions) }
      guard status[index] == .ended else { return }
      status[index] = .verified
      acknowledged[index] = files[index].size
      lastProgress = now
      actions.append(.fileVerified(index))
      actions.append(.progress)
      finishIfDone(into: &actions)
    case .cancel(let reason, let message):
      let end: TransferEnd =
        reason == .cancelled || reason.rawValue > 9 || reason.rawValue == 0
        ? .cancelled(byPeer: true, message: message) : .failed(reason, message)
      phase = .finished(end)
      actions.append(.finished(end))
    case .offer, .chunk, .end:
      invalid("a \(body.name) frame sent to the sender", &actions)
    }
  }

  private mutating func accept(_ accepted: [AcceptedFile], now: Duration, into actions: inout [Action]) {
    var listed = Array(repeating: AcceptedFile?.none, count: files.count)
    for entry in accepted {
      guard let index = valid(entry.index), entry.offset <= files[index].size else {
        return invalid("an ACCEPT of a file outside the offer, or beyond its size", &actions)
      }
      listed[index] = entry
    }
    for index in files.indices {
      if status[index] == .verified { continue }
      guard let entry = listed[index] else {
        status[index] = .notWanted
        continue
      }
      if entry.status == .have || files[index].isDirectory {
        status[index] = .verified
        acknowledged[index] = files[index].size
      } else {
        status[index] = .queued
        acknowledged[index] = entry.offset
        nextOffset[index] = entry.offset
      }
    }
    phase = .sending
    paused = false
    current = nil
    lastProgress = now
    actions.append(.progress)
    advance(into: &actions)
  }

  // MARK: Routes and time

  /// The route to the receiver went away: in-flight chunks are lost; a new OFFER follows
  /// when it is back (``offer``), and its ACCEPT says where to go on.
  package mutating func routeLost() {
    guard !isFinished else { return }
    paused = true
  }

  /// On a lossy route (through relays), a window that stayed unacknowledged for `stall` goes
  /// back to what the receiver has.
  package mutating func tick(now: Duration, stall: Duration, into actions: inout [Action]) {
    guard phase == .sending, !paused, inFlight > 0, now - lastProgress >= stall else { return }
    guard let first = files.indices.first(where: { status[$0] == .sending || status[$0] == .ended }) else { return }
    rewind(to: first, offset: acknowledged[first], now: now, into: &actions)
  }

  /// We cancel: CANCEL goes to the receiver (when it can be reached).
  package mutating func cancel(_ message: String, into actions: inout [Action]) {
    guard !isFinished else { return }
    actions.append(.send(.cancel(.cancelled, message)))
    let end = TransferEnd.cancelled(byPeer: false, message: message)
    phase = .finished(end)
    actions.append(.finished(end))
  }

  /// We give up with `reason` (the receiver is told).
  package mutating func fail(_ reason: TransferCancelReason, _ message: String, into actions: inout [Action]) {
    guard !isFinished else { return }
    actions.append(.send(.cancel(reason, message)))
    let end = TransferEnd.failed(reason, message)
    phase = .finished(end)
    actions.append(.finished(end))
  }

  // MARK: Internals

  private func valid(_ index: UInt16) -> Int? { Int(index) < files.count ? Int(index) : nil }

  private mutating func invalid(_ what: String, _ actions: inout [Action]) {
    fail(.invalid, "the receiver sent \(what)", into: &actions)
  }

  /// Files `index` and after start over from what the receiver has; `index` from `offset`.
  private mutating func rewind(to index: Int, offset: UInt64, now: Duration, into actions: inout [Action]) {
    for other in index..<files.count where status[other] == .sending || status[other] == .ended {
      status[other] = .queued
      nextOffset[other] = acknowledged[other]
    }
    acknowledged[index] = min(acknowledged[index], offset)
    nextOffset[index] = offset
    current = nil
    lastProgress = now
    advance(into: &actions)
  }

  /// Starts the next queued file, or finishes.
  private mutating func advance(into actions: inout [Action]) {
    guard current == nil else { return }
    if let next = files.indices.first(where: { status[$0] == .queued }) {
      status[next] = .sending
      current = next
      actions.append(.read(index: next, offset: nextOffset[next]))
      return
    }
    finishIfDone(into: &actions)
  }

  private mutating func finishIfDone(into actions: inout [Action]) {
    guard phase == .sending, files.indices.allSatisfy({ status[$0] == .verified || status[$0] == .notWanted }) else { return }
    phase = .finished(.completed)
    actions.append(.finished(.completed))
  }
}

extension TransferFrame.Body {
  /// The kind's name in PROTOCOL.md (`OFFER`, `CHUNK`, ...).
  package var name: String {
    switch self {
    case .offer: "OFFER"
    case .accept: "ACCEPT"
    case .chunk: "CHUNK"
    case .end: "END"
    case .ack: "ACK"
    case .resend: "RESEND"
    case .verified: "VERIFIED"
    case .cancel: "CANCEL"
    }
  }
}
