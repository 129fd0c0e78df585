/// The receiver's side of one transfer (PROTOCOL.md 13.3), as a value: it takes the sender's
/// frames and what the shell has written and checked, and says what to write and send.
///
/// Bytes are taken only in order: a chunk at the offset expected next is written, a copy of
/// bytes already taken is dropped, and a chunk beyond (bytes went missing on a route through
/// relays) is dropped and answered with RESEND, at most once a second. A file is never
/// taken beyond the size the offer gave (a lying sender fails the transfer before a byte
/// too many is written), and bytes handed to the writer and not yet written are bounded.
package struct IncomingTransferState: Sendable {
  package enum Phase: Hashable, Sendable {
    /// The offer waits for the person's (or program's) answer.
    case asking
    /// Accepted: the files are being set up (folders, `.part` files, free space).
    case preparing
    case receiving
    case finished(TransferEnd)
  }

  package enum FileStatus: Hashable, Sendable {
    case notWanted
    case receiving
    /// Every byte is written; the hash is being checked.
    case checking
    case verified
  }

  package enum Action: Hashable, Sendable {
    case send(TransferFrame.Body)
    /// Write `data` to file `index` at `offset` (always the next byte of the file).
    case write(index: Int, offset: UInt64, data: [UInt8])
    /// Every byte of file `index` is written: check its size and hash, then save it.
    case check(index: Int, hash: [UInt8])
    case progress
    case fileVerified(Int)
    case finished(TransferEnd)
  }

  package let id: TransferID
  package let peer: PeerID
  package let files: [OfferedFile]
  package private(set) var phase = Phase.asking
  package private(set) var status: [FileStatus]
  /// Per file: bytes taken (handed to the writer).
  package private(set) var taken: [UInt64]
  /// Per file: bytes written.
  package private(set) var written: [UInt64]
  private var acknowledged: [UInt64]
  private var lastResend: [Duration?]
  /// Bytes handed to the writer and not yet written.
  package private(set) var pendingWrites: UInt64 = 0
  /// More pending bytes than this and the sender ignores the window: the transfer fails.
  package var pendingLimit: UInt64
  /// An ACK goes out at least every this many bytes written.
  package var ackInterval: UInt64 = 1 << 20

  package init(id: TransferID, peer: PeerID, files: [OfferedFile], pendingLimit: UInt64) {
    self.id = id
    self.peer = peer
    self.files = files
    self.pendingLimit = pendingLimit
    status = Array(repeating: .notWanted, count: files.count)
    taken = Array(repeating: 0, count: files.count)
    written = Array(repeating: 0, count: files.count)
    acknowledged = Array(repeating: 0, count: files.count)
    lastResend = Array(repeating: nil, count: files.count)
  }

  package var isFinished: Bool { if case .finished = phase { true } else { false } }

  package var wanted: [Int] { files.indices.filter { status[$0] != .notWanted } }

  package var totals: (bytes: UInt64, done: UInt64) {
    var total: UInt64 = 0
    var done: UInt64 = 0
    for index in wanted {
      total += files[index].size
      done += written[index]
    }
    return (total, done)
  }

  package var verifiedCount: Int { status.filter { $0 == .verified }.count }

  // MARK: Answers

  /// The person accepted: the shell sets the files up, then calls ``prepared(_:into:)``.
  package mutating func accepted() {
    guard phase == .asking else { return }
    phase = .preparing
  }

  /// The files are set up; `have` gives, per wanted file, the bytes already there (a resume)
  /// or `nil` for a file already verified. ACCEPT goes out.
  package mutating func prepared(_ have: [Int: UInt64?], into actions: inout [Action]) {
    guard phase == .preparing || phase == .receiving else { return }
    phase = .receiving
    actions.append(.send(.accept(acceptance(have))))
    actions.append(.progress)
    finishIfDone(into: &actions)
  }

  private mutating func acceptance(_ have: [Int: UInt64?]) -> [AcceptedFile] {
    var entries: [AcceptedFile] = []
    for index in have.keys.sorted() {
      guard let offset = have[index]! else {
        status[index] = .verified
        written[index] = files[index].size
        taken[index] = files[index].size
        entries.append(AcceptedFile(index: UInt16(index), status: .have, offset: files[index].size))
        continue
      }
      status[index] = .receiving
      taken[index] = offset
      written[index] = offset
      acknowledged[index] = offset
      entries.append(AcceptedFile(index: UInt16(index), status: .send, offset: offset))
    }
    return entries
  }

  /// The sender offered again (a new route after a break): the same ACCEPT, from where we are.
  package mutating func reoffered(_ offered: [OfferedFile], into actions: inout [Action]) {
    guard phase == .receiving else { return }
    guard offered == files else {
      fail(.invalid, "the sender offered different files under the same transfer id", into: &actions)
      return
    }
    var entries: [AcceptedFile] = []
    for index in wanted {
      switch status[index] {
      case .verified: entries.append(AcceptedFile(index: UInt16(index), status: .have, offset: files[index].size))
      case .checking: entries.append(AcceptedFile(index: UInt16(index), status: .send, offset: files[index].size))
      default: entries.append(AcceptedFile(index: UInt16(index), status: .send, offset: taken[index]))
      }
      lastResend[index] = nil
    }
    if !entries.isEmpty { actions.append(.send(.accept(entries))) }
  }

  // MARK: Frames from the sender

  package mutating func receive(_ body: TransferFrame.Body, now: Duration, into actions: inout [Action]) {
    guard !isFinished else { return }
    switch body {
    case .chunk(let index, let offset, let data):
      guard phase == .receiving else { return }
      guard let index = valid(index), status[index] != .notWanted else { return invalid("bytes of a file that was not accepted", &actions) }
      guard status[index] == .receiving else { return }  // a late copy
      let size = files[index].size
      let end = offset.addingReportingOverflow(UInt64(data.count))
      guard !end.overflow, end.partialValue <= size else {
        fail(
          .integrity, "the sender sent more bytes of \(files[index].name) than the \(size) it offered (up to byte \(end.partialValue))",
          into: &actions)
        return
      }
      let expected = taken[index]
      if end.partialValue <= expected { return }  // a copy of what we have
      if offset > expected {
        askAgain(index, from: expected, now: now, into: &actions)
        return
      }
      let skip = Int(expected - offset)
      let fresh = skip == 0 ? data : Array(data[skip...])
      taken[index] = end.partialValue
      pendingWrites += UInt64(fresh.count)
      guard pendingWrites <= pendingLimit else {
        fail(.invalid, "the sender sent more than its window allows", into: &actions)
        return
      }
      actions.append(.write(index: index, offset: expected, data: fresh))
    case .end(let index, let size, let hash):
      guard phase == .receiving else { return }
      guard let index = valid(index), status[index] != .notWanted else { return invalid("the END of a file that was not accepted", &actions) }
      guard status[index] == .receiving else { return }
      guard size == files[index].size else {
        fail(.integrity, "the sender says \(files[index].name) has \(size) bytes, but it offered \(files[index].size)", into: &actions)
        return
      }
      guard taken[index] == size else {
        askAgain(index, from: taken[index], now: now, into: &actions)
        return
      }
      guard hash.count == 32 else { return invalid("an END without a 32-byte hash", &actions) }
      status[index] = .checking
      actions.append(.check(index: index, hash: hash))
    case .cancel(let reason, let message):
      let end: TransferEnd =
        reason == .cancelled || reason.rawValue > 9 || reason.rawValue == 0
        ? .cancelled(byPeer: true, message: message) : .failed(reason, message)
      phase = .finished(end)
      actions.append(.finished(end))
    case .offer(let offered):
      reoffered(offered, into: &actions)
    case .accept, .ack, .resend, .verified:
      invalid("a \(body.name) frame sent to the receiver", &actions)
    }
  }

  // MARK: What the shell did

  /// The writer wrote `count` bytes of file `index`.
  package mutating func wrote(index: Int, count: Int, into actions: inout [Action]) {
    guard !isFinished else { return }
    written[index] += UInt64(count)
    pendingWrites -= min(pendingWrites, UInt64(count))
    if written[index] - acknowledged[index] >= ackInterval || written[index] == files[index].size {
      acknowledged[index] = written[index]
      actions.append(.send(.ack(index: UInt16(index), offset: written[index])))
    }
    actions.append(.progress)
  }

  /// File `index` matched its hash and is saved.
  package mutating func fileSaved(index: Int, into actions: inout [Action]) {
    guard !isFinished, status[index] == .checking else { return }
    status[index] = .verified
    actions.append(.send(.verified(index: UInt16(index))))
    actions.append(.fileVerified(index))
    actions.append(.progress)
    finishIfDone(into: &actions)
  }

  /// We give up with `reason` (the sender is told): a hash mismatch, a write error, ...
  package mutating func fail(_ reason: TransferCancelReason, _ message: String, into actions: inout [Action]) {
    guard !isFinished else { return }
    actions.append(.send(.cancel(reason, message)))
    let end = TransferEnd.failed(reason, message)
    phase = .finished(end)
    actions.append(.finished(end))
  }

  /// We cancel (or refuse, while asking).
  package mutating func cancel(_ message: String, into actions: inout [Action]) {
    guard !isFinished else { return }
    if phase == .asking {
      actions.append(.send(.cancel(.refused, message)))
      let end = TransferEnd.failed(.refused, message)
      phase = .finished(end)
      actions.append(.finished(end))
      return
    }
    actions.append(.send(.cancel(.cancelled, message)))
    let end = TransferEnd.cancelled(byPeer: false, message: message)
    phase = .finished(end)
    actions.append(.finished(end))
  }

  // MARK: Internals

  private func valid(_ index: UInt16) -> Int? { Int(index) < files.count ? Int(index) : nil }

  private mutating func invalid(_ what: String, _ actions: inout [Action]) {
    fail(.invalid, "the sender sent \(what)", into: &actions)
  }

  private mutating func askAgain(_ index: Int, from offset: UInt64, now: Duration, into actions: inout [Action]) {
    if let last = lastResend[index], now - last < .seconds(1) { return }
    lastResend[index] = now
    actions.append(.send(.resend(index: UInt16(index), offset: offset)))
  }

  private mutating func finishIfDone(into actions: inout [Action]) {
    guard phase == .receiving, wanted.allSatisfy({ status[$0] == .verified }) else { return }
    phase = .finished(.completed)
    actions.append(.finished(.completed))
  }
}
