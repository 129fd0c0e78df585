import Dispatch
import NearbyCore

/// Offers to us: asking (an event the application answers), setting the files up, writing
/// chunks on the transfer's queue, checking each file's hash, and resuming after a restart.
extension NearbySession {
  /// An OFFER of a transfer we do not have going.
  func offerArrived(_ id: TransferID, _ offered: [OfferedFile], from peer: PeerID, via carrier: ConnectionID) {
    guard let sender = machine.peer(peer) else { return }
    if let closed = files.closed[id], closed.peer != peer {
      // Ids are random: another peer's means a peer playing with ids (taking an id over
      // grew the memory of closed transfers in turns).
      sendFileFrame(.cancel(.invalid, "transfer \(id.shortHex) belongs to another peer"), id, to: peer)
      return
    }
    if let closed = files.closed[id], closed.peer == peer {
      if closed.reason == 0 {
        // It completed here; the sender missed the last VERIFIED.
        sendFileFrame(.accept(offered.indices.map { AcceptedFile(index: UInt16($0), status: .have, offset: offered[$0].size) }), id, to: peer)
      } else {
        sendFileFrame(.cancel(TransferCancelReason(rawValue: closed.reason), "that transfer is over"), id, to: peer)
      }
      return
    }
    if let record = files.restored.removeValue(forKey: id) {
      guard record.peer == peer, record.files == offered, let downloads = record.downloads else {
        sendFileFrame(.cancel(.invalid, "transfer \(id.shortHex) was offered with other files before"), id, to: peer)
        return
      }
      resume(id, record: record, sender: sender, downloads: downloads)
      return
    }
    let asks: Bool
    switch configuration.acceptFiles {
    case .none: asks = false
    case .all where acceptsFilesAutomatically(from: peer) && configuration.downloadsDirectory != nil: asks = false
    default: asks = true
    }
    if let refusal = offerRefusal(from: peer, via: carrier, asks: asks) {
      sendFileFrame(.cancel(.busy, refusal), id, to: peer)
      return
    }
    let asking = files.incoming.values.filter { $0.state.phase == .asking }.count
    guard asking < transferTuning.maximumPendingOffers, files.incoming.count < transferTuning.maximumActiveTransfers else {
      sendFileFrame(.cancel(.busy, "too many transfers at once; try again later"), id, to: peer)
      return
    }
    let paths: [[String]]
    switch TransferName.paths(for: offered) {
    case .success(let value): paths = value
    case .failure(let error):
      sendFileFrame(.cancel(.invalid, error.description), id, to: peer)
      emit(.error(.rejected("refused an offer from \(sender): \(error)")))
      return
    }
    let queue = FileTransfers.queue(id)
    let record = TransferStore.Record(id: id, direction: .receive, peer: peer, files: offered)
    files.incoming[id] = FileTransfers.Incoming(
      state: IncomingTransferState(id: id, peer: peer, files: offered, pendingLimit: 2 * transferTuning.directWindow + 1 << 20),
      peer: sender, queue: queue, paths: paths, record: record, arrived: now)
    switch configuration.acceptFiles {
    case .none:
      refuseOffer(id, "\(configuration.peer.name.value) does not take files")
    case .all where acceptsFilesAutomatically(from: peer) && configuration.downloadsDirectory != nil:
      startAccepting(id, into: configuration.downloadsDirectory!) { _ in }
    default:
      emit(.transfer(.offer(IncomingOffer(id: id, from: sender, files: offered, responder: SessionOfferResponder(self)))))
    }
  }

  /// Why a new offer from `peer`, carried by connection `carrier`, is refused before anything
  /// is made for it, if it is:
  /// - it would ask the application (`asks`), which is behind with its events
  ///   (``TransferTuning/offerEventBacklog``);
  /// - the peer, or the connection that carries it (a relay's carries the offers of every
  ///   peer behind it, and a hostile relay can make up thousands), offers faster than
  ///   ``TransferTuning/offerBurst`` and ``TransferTuning/offersPerSecond`` allow. Each offer
  ///   is an event, and one cancelled at once frees its slot among the pending offers.
  func offerRefusal(from peer: PeerID, via carrier: ConnectionID, asks: Bool) -> String? {
    if asks, hub.deepestBuffer >= transferTuning.offerEventBacklog {
      return "\(configuration.peer.name.value) is behind with its events; try again later"
    }
    let burst = Double(transferTuning.offerBurst)
    let rate = transferTuning.offersPerSecond
    let now = now
    if files.offerAllowance.count >= 1024 {
      // A bucket that refilled is as good as none: keep only those still in use.
      files.offerAllowance = files.offerAllowance.filter { !$0.value.isFull(burst: burst, perSecond: rate, now: now) }
    }
    let sources: [FileTransfers.OfferSource] = [.carrier(carrier), .peer(peer)]
    for source in sources {
      guard files.offerAllowance[source]?.canTake(burst: burst, perSecond: rate, now: now) ?? true else {
        return "too many offers at once; try again later"
      }
    }
    guard files.offerAllowance.count < 4096 else { return "too many offers at once; try again later" }
    for source in sources {
      _ = files.offerAllowance[source, default: TokenBucket()].take(burst: burst, perSecond: rate, now: now)
    }
    return nil
  }

  /// `IncomingOffer.accept(into:)`: sets the files up below `directory`, then answers.
  func acceptOffer(_ id: TransferID, files wanted: Set<Int>? = nil, into directory: String) async throws(TransferError) {
    let result: Result<Void, TransferError> = await withCheckedContinuation { continuation in
      startAccepting(id, files: wanted, into: directory) { continuation.resume(returning: $0) }
    }
    try result.get()
  }

  /// Sets up the files of offer `id` below `directory` on the transfer's queue; the sender
  /// is answered from the I/O thread once they are. `reply` is called exactly once, with
  /// whether the files could be set up. `wanted`: the indices of the files to receive (nil:
  /// all); the others are left out of the ACCEPT, so the sender does not send them.
  func startAccepting(
    _ id: TransferID, files wanted: Set<Int>? = nil, into directory: String, reply: @escaping @Sendable (Result<Void, TransferError>) -> Void
  ) {
    guard state == .running, !shutdownRequested else { return reply(.failure(.notRunning)) }
    guard let transfer = files.incoming[id], transfer.state.phase == .asking else {
      return reply(.failure(.notFound("no offer \(id.shortHex) is waiting for an answer")))
    }
    files.incoming[id]!.state.accepted()
    let absolute = OfferBuilder.absolutePath(directory)
    var entries: [Int: FileSink.Entry] = [:]
    for (index, file) in transfer.state.files.enumerated() where wanted?.contains(index) ?? true {
      entries[index] = FileSink.Entry(path: transfer.paths[index], size: file.size, isExecutable: file.isExecutable, isDirectory: file.isDirectory)
    }
    let chosen = entries
    let queue = transfer.queue
    let checkFreeSpace = transferTuning.checkFreeSpace
    queue.async { [self] in
      let created = FileSink.create(in: absolute, entries: chosen, checkFreeSpace: checkFreeSpace)
      onLoop { session in session.accepted(id, created, queue: queue, downloads: absolute) }
      switch created {
      case .success: reply(.success(()))
      case .failure(let error): reply(.failure(error.isNoSpace ? .noSpace(error.description) : .downloads(error.description)))
      }
    }
  }

  private func accepted(_ id: TransferID, _ created: Result<FileSink, FileError>, queue: DispatchQueue, downloads: String) {
    guard files.incoming[id] != nil else {
      if case .success(let sink) = created { queue.async { sink.discard() } }
      return
    }
    switch created {
    case .failure(let error):
      var actions: [IncomingTransferState.Action] = []
      files.incoming[id]!.state.fail(error.isNoSpace ? .noSpace : .writeFailed, error.description, into: &actions)
      performIncoming(id, actions)
    case .success(let sink):
      let have = Dictionary(uniqueKeysWithValues: sink.entries.map { ($0.key, $0.value.isDirectory ? UInt64?.none : UInt64?.some(0)) })
      prepared(id, sink: sink, queue: queue, downloads: downloads, have: have)
    }
  }

  /// ``IncomingOffer/refuse()``.
  func refuseOffer(_ id: TransferID, _ message: String? = nil) {
    guard files.incoming[id]?.state.phase == .asking else { return }
    var actions: [IncomingTransferState.Action] = []
    files.incoming[id]!.state.cancel(message ?? "\(configuration.peer.name.value) refused the offer", into: &actions)
    performIncoming(id, actions)
  }

  /// A transfer of an earlier run, offered again: the `.part` files are hashed again (on the
  /// file queue) and the sender told where to go on — without asking anyone again.
  private func resume(_ id: TransferID, record: TransferStore.Record, sender: Peer, downloads: String) {
    let queue = FileTransfers.queue(id)
    var state = IncomingTransferState(id: id, peer: sender.id, files: record.files, pendingLimit: 2 * transferTuning.directWindow + 1 << 20)
    state.accepted()
    let paths = record.files.indices.map { record.paths[$0] ?? ["_"] }
    files.incoming[id] = FileTransfers.Incoming(state: state, peer: sender, queue: queue, paths: paths, downloads: downloads, record: record)
    var entries: [Int: FileSink.Entry] = [:]
    for (index, file) in record.files.enumerated() {
      guard let path = record.paths[index] else { continue }
      entries[index] = FileSink.Entry(path: path, size: file.size, isExecutable: file.isExecutable, isDirectory: file.isDirectory)
    }
    let saved = record.saved
    let wanted = entries
    queue.async { [self] in
      let result = FileSink.resume(in: downloads, entries: wanted, saved: saved)
      onLoop { session in
        switch result {
        case .failure(let error):
          guard session.files.incoming[id] != nil else { return }
          var actions: [IncomingTransferState.Action] = []
          session.files.incoming[id]!.state.fail(.writeFailed, "cannot resume: \(error)", into: &actions)
          session.performIncoming(id, actions)
        case .success(let (sink, have)):
          session.prepared(id, sink: sink, queue: queue, downloads: downloads, have: have)
        }
      }
    }
  }

  /// The files are set up: remember where, and answer the sender.
  private func prepared(_ id: TransferID, sink: FileSink, queue: DispatchQueue, downloads: String, have: [Int: UInt64?]) {
    guard files.incoming[id] != nil else {
      queue.async { sink.discard() }
      return
    }
    files.incoming[id]!.sink = sink
    files.incoming[id]!.downloads = downloads
    // Where each file goes (a first component may have been numbered) and what was saved.
    var record = files.incoming[id]!.record
    record.downloads = downloads
    let placed = sink.entries
    for (index, entry) in placed { record.paths[index] = entry.path }
    files.incoming[id]!.record = record
    for (index, entry) in placed { files.incoming[id]!.paths[index] = entry.path }
    for (index, path) in record.saved {
      let file = record.files[index]
      files.incoming[id]!.saved[index] = TransferredFile(
        name: file.name, path: downloads + "/" + path.joined(separator: "/"), size: file.size, blake2b: "")
    }
    persist(record, on: files.incoming[id]!.queue)
    var actions: [IncomingTransferState.Action] = []
    files.incoming[id]!.state.prepared(have, into: &actions)
    performIncoming(id, actions)
    ensureTransferTimer()
  }

  /// Carries out what an incoming transfer's state decided.
  func performIncoming(_ id: TransferID, _ actions: [IncomingTransferState.Action]) {
    for action in actions {
      guard let transfer = files.incoming[id] else { return }
      switch action {
      case .send(let body):
        sendFileFrame(body, id, to: transfer.peer.id)
      case .write(let index, let offset, let data):
        guard let sink = transfer.sink else { continue }
        transfer.queue.async { [self] in
          let error = sink.write(index, at: offset, data)
          let count = data.count
          onLoop { session in session.written(id, index: index, count: count, error: error) }
        }
      case .check(let index, let hash):
        guard let sink = transfer.sink else { continue }
        transfer.queue.async { [self] in
          let outcome = sink.finish(index, expected: hash)
          onLoop { session in session.checked(id, index: index, outcome) }
        }
      case .progress:
        reportProgress(incoming: id, force: false)
      case .fileVerified:
        break
      case .finished(let end):
        finishIncoming(id, end)
      }
    }
  }

  private func written(_ id: TransferID, index: Int, count: Int, error: FileError?) {
    guard files.incoming[id] != nil else { return }
    var actions: [IncomingTransferState.Action] = []
    if let error {
      files.incoming[id]!.state.fail(error.isNoSpace ? .noSpace : .writeFailed, error.description, into: &actions)
    } else {
      files.incoming[id]!.state.wrote(index: index, count: count, into: &actions)
    }
    performIncoming(id, actions)
  }

  private func checked(_ id: TransferID, index: Int, _ outcome: FileSink.Check) {
    guard let transfer = files.incoming[id] else { return }
    var actions: [IncomingTransferState.Action] = []
    switch outcome {
    case .saved(let path, let relative, let hash):
      let file = transfer.state.files[index]
      files.incoming[id]!.saved[index] = TransferredFile(name: file.name, path: path, size: file.size, blake2b: hash.hexString)
      var record = transfer.record
      record.saved[index] = relative
      files.incoming[id]!.record = record
      persist(record, on: transfer.queue)
      files.incoming[id]!.state.fileSaved(index: index, into: &actions)
    case .mismatch(let message):
      files.incoming[id]!.state.fail(.integrity, message, into: &actions)
    case .failed(let error):
      files.incoming[id]!.state.fail(error.isNoSpace ? .noSpace : .writeFailed, error.description, into: &actions)
    }
    performIncoming(id, actions)
  }

  private func finishIncoming(_ id: TransferID, _ end: TransferEnd) {
    if end == .completed { emit(.transfer(.progress(incomingProgress(id, rate: 0)))) }
    guard let transfer = files.incoming.removeValue(forKey: id) else { return }
    // What was not saved goes; a record stays a week to answer the sender should it offer again.
    if end != .completed, let sink = transfer.sink { transfer.queue.async { sink.discard() } }
    var record = transfer.record
    record.status = .closed
    switch end {
    case .completed: record.closedWith = 0
    case .cancelled: record.closedWith = TransferCancelReason.cancelled.rawValue
    case .failed(let reason, _): record.closedWith = reason.rawValue
    }
    let forgotten = files.closed.insert(id, peer: transfer.peer.id, reason: record.closedWith)
    if transfer.sink != nil { persist(record, on: transfer.queue) }
    forgetRecords(of: forgotten)
    let saved = transfer.state.files.indices.compactMap { transfer.saved[$0] }
    emit(.transfer(.finished(id: id, peer: transfer.peer, direction: .receive, end: end, files: saved)))
  }

  // MARK: Progress

  func incomingProgress(_ id: TransferID, rate: UInt64) -> TransferProgress {
    let transfer = files.incoming[id]!
    let totals = transfer.state.totals
    let wanted = transfer.state.wanted
    let current = wanted.first { transfer.state.status[$0] == .receiving }.map { transfer.state.files[$0].name }
    return TransferProgress(
      id: id, peer: transfer.peer, direction: .receive, bytes: totals.done,
      total: wanted.isEmpty ? transfer.state.files.reduce(0) { $0 + $1.size } : totals.bytes, rate: rate,
      filesDone: transfer.state.verifiedCount, fileCount: wanted.isEmpty ? transfer.state.files.count : wanted.count, currentFile: current)
  }

  func reportProgress(incoming id: TransferID, force: Bool) {
    guard let transfer = files.incoming[id], transfer.state.phase == .receiving else { return }
    let current = now
    if !force, let last = transfer.meter.lastReported, current - last < transferTuning.progressInterval { return }
    let rate = files.incoming[id]!.meter.rate(at: current, bytes: transfer.state.totals.done)
    files.incoming[id]!.meter.lastReported = current
    let progress = incomingProgress(id, rate: rate)
    if transfer.meter.lastReported == nil { emit(.transfer(.started(progress))) }
    emit(.transfer(.progress(progress)))
  }
}
