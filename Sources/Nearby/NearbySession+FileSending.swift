import Dispatch
import NearbyCore
import NearbyTransport

/// Our offers: reading ahead on the transfer's queue, and the pump that moves chunks into
/// the connection's queue while it holds less than ``TransferTuning/queueBudget`` bytes, so
/// that a message sent meanwhile is never stuck behind a large file.
extension NearbySession {
  func startOutgoing(
    id: TransferID, peer: Peer, files offered: [OfferedFile], items: [FileSource.Item], skipped: [String], record: TransferStore.Record,
    queue: DispatchQueue
  ) {
    let relayed = { if case .success(.relayed) = machine.transferRoute(to: peer.id) { true } else { false } }()
    let state = OutgoingTransferState(
      id: id, peer: peer.id, files: offered, window: relayed ? transferTuning.relayedWindow : transferTuning.directWindow, now: now)
    let handle = OutgoingTransfer(id: id, peer: peer, files: offered, skipped: skipped, session: self)
    files.outgoing[id] = FileTransfers.Outgoing(
      state: state, peer: peer, queue: queue, source: FileSource(items: items), handle: handle, record: record, relayed: relayed,
      offered: misstated(offered))
    sendFileFrame(offerFrame(id), id, to: peer.id)
    ensureTransferTimer()
  }

  /// The OFFER of one of our transfers.
  func offerFrame(_ id: TransferID) -> TransferFrame.Body {
    guard let transfer = files.outgoing[id] else { return .offer([]) }
    return transfer.offered.map { .offer($0) } ?? transfer.state.offer
  }

  /// The files as a lying sender offers them (tests of the receiver), or nil.
  private func misstated(_ files: [OfferedFile]) -> [OfferedFile]? {
    let tuning = transferTuning
    guard tuning.misstateSizes != 0 || !tuning.offeredNames.isEmpty else { return nil }
    return files.enumerated().map { index, file in
      let name = index < tuning.offeredNames.count ? tuning.offeredNames[index] : file.name
      let size = file.isDirectory ? 0 : UInt64(max(0, Int64(file.size) + tuning.misstateSizes))
      return OfferedFile(name: name, size: size, flags: file.flags)
    }
  }

  /// Carries out what an outgoing transfer's state decided.
  func performOutgoing(_ id: TransferID, _ actions: [OutgoingTransferState.Action]) {
    for action in actions {
      guard let transfer = files.outgoing[id] else { return }
      switch action {
      case .send(let body):
        if !sendFileFrame(body, id, to: transfer.peer.id), case .cancel = body {
          // The receiver cannot be told now: it is told when it can be reached.
          files.cancelOwed[id] = transfer.peer.id
          var record = transfer.record
          record.status = .cancelOwed
          persist(record, on: transfer.queue)
        }
      case .read(let index, let offset):
        startReading(id, index: index, offset: offset)
      case .progress:
        reportProgress(outgoing: id, force: false)
        pump(id)
      case .fileVerified:
        break
      case .finished(let end):
        finishOutgoing(id, end)
      }
    }
  }

  private func finishOutgoing(_ id: TransferID, _ end: TransferEnd) {
    guard let transfer = files.outgoing.removeValue(forKey: id) else { return }
    reportFinalProgress(transfer)
    if files.cancelOwed[id] == nil { forget(id, .send, on: transfer.queue) }
    let saved = transfer.state.files.indices.filter { transfer.state.status[$0] == .verified && !transfer.state.files[$0].isDirectory }.map {
      TransferredFile(
        name: transfer.state.files[$0].name, path: transfer.source.items[$0].path, size: transfer.state.files[$0].size,
        blake2b: transfer.hashes[$0]?.hexString ?? "")
    }
    emit(.transfer(.finished(id: id, peer: transfer.peer, direction: .send, end: end, files: saved)))
    transfer.handle.finish(end)
  }

  // MARK: Reading ahead

  /// Starts (or restarts, after a rewind) reading file `index` at `offset`.
  private func startReading(_ id: TransferID, index: Int, offset: UInt64) {
    guard files.outgoing[id] != nil else { return }
    files.outgoing[id]!.generation += 1
    files.outgoing[id]!.ready = []
    files.outgoing[id]!.readIndex = index
    files.outgoing[id]!.readOffset = offset
    files.outgoing[id]!.readDone = false
    fillReads(id)
  }

  /// Asks the file queue for chunks until enough are read ahead.
  private func fillReads(_ id: TransferID) {
    guard var transfer = files.outgoing[id], !transfer.state.paused else { return }
    let index = transfer.readIndex
    guard index >= 0 else { return }
    let size = transfer.state.files[index].size
    while !transfer.readDone, transfer.readsInFlight + transfer.ready.count < transferTuning.readAhead {
      let offset = transfer.readOffset
      let count = Int(min(UInt64(transferTuning.chunkSize), size - offset))
      transfer.readOffset += UInt64(count)
      transfer.readDone = transfer.readOffset == size
      transfer.readsInFlight += 1
      let generation = transfer.generation
      let source = transfer.source
      transfer.queue.async { [self] in
        let result = source.read(index: index, offset: offset, count: count)
        onLoop { session in session.readCompleted(id, generation: generation, index: index, offset: offset, result) }
      }
    }
    files.outgoing[id] = transfer
  }

  private func readCompleted(_ id: TransferID, generation: UInt64, index: Int, offset: UInt64, _ result: Result<FileSource.Chunk, FileError>) {
    guard files.outgoing[id] != nil else { return }
    files.outgoing[id]!.readsInFlight -= 1
    guard files.outgoing[id]!.generation == generation else {
      fillReads(id)
      return
    }
    switch result {
    case .failure(let error):
      var actions: [OutgoingTransferState.Action] = []
      files.outgoing[id]!.state.readFailed(error.description, into: &actions)
      performOutgoing(id, actions)
    case .success(let chunk):
      if let hash = chunk.hash { files.outgoing[id]!.hashes[index] = hash }
      files.outgoing[id]!.ready.append(FileTransfers.ReadChunk(index: index, offset: offset, data: chunk.data, hash: chunk.hash))
      pump(id)
    }
  }

  // MARK: The pump

  /// Moves read chunks into the connection's queue while the window and the queue budget
  /// allow (at most `limit` chunks of data); asks to be called again when the queue drains.
  /// - Returns: whether it stopped at `limit` (it may have more to queue).
  @discardableResult
  func pump(_ id: TransferID, limit: Int = .max) -> Bool {
    guard let transfer = files.outgoing[id], !transfer.state.paused, transfer.state.phase == .sending else { return false }
    guard case .success(let route) = inspect({ $0.transferRoute(to: transfer.peer.id) }), let connection = connections[route.connection] else {
      transferPeerLost(transfer.peer.id)
      return false
    }
    let budget = transferTuning.queueBudget
    var queued = 0
    defer { fillReads(id) }
    while let chunk = files.outgoing[id]?.ready.first {
      guard queued < limit else { return true }
      let state = files.outgoing[id]!.state
      guard state.mayStart(index: chunk.index, offset: chunk.offset) else {
        // Read before a rewind, or beyond what is due: not for now.
        if state.current != chunk.index || chunk.offset < state.nextOffset[chunk.index] {
          files.outgoing[id]!.ready.removeFirst()
          continue
        }
        break
      }
      if !chunk.data.isEmpty {
        guard state.windowHasRoom(for: chunk.data.count) else { break }
        guard connection.queuedBytes < budget else {
          if !connection.notifyWhenQueued(below: budget / 2) { continue }
          break
        }
        guard withinRate(chunk.data.count) else { break }
        var data = chunk.data
        if transferTuning.corruptFirstChunk, !files.outgoing[id]!.corrupted.contains(chunk.index) {
          files.outgoing[id]!.corrupted.insert(chunk.index)
          data[data.count / 2] ^= 0x01
        }
        guard enqueueChunk(id, index: chunk.index, offset: chunk.offset, data: data, route: route, on: connection) else {
          _ = connection.notifyWhenQueued(below: budget / 2)
          break
        }
        files.outgoing[id]!.state.sent(index: chunk.index, count: chunk.data.count)
        queued += 1
      }
      files.outgoing[id]!.ready.removeFirst()
      if let hash = chunk.hash {
        var actions: [OutgoingTransferState.Action] = []
        files.outgoing[id]!.state.fileRead(index: chunk.index, hash: hash, into: &actions)
        performOutgoing(id, actions)
        guard files.outgoing[id] != nil else { return false }
      }
    }
    return false
  }

  /// Queues one CHUNK: straight into the send buffer on a direct session, sealed for the
  /// receiver through a relay. - Returns: whether it was queued.
  private func enqueueChunk(
    _ id: TransferID, index: Int, offset: UInt64, data: [UInt8], route: SessionStateMachine.TransferRoute, on connection: TCPConnection
  ) -> Bool {
    let result: TCPConnection.QueueResult
    switch route {
    case .direct:
      result = connection.enqueue { buffer in
        data.withUnsafeBytes { FrameEncoder.encodeChunk(id, index: UInt16(index), offset: offset, data: $0, into: &buffer) }
      }
    case .relayed:
      var frame: [UInt8] = []
      data.withUnsafeBytes { FrameEncoder.encodeChunk(id, index: UInt16(index), offset: offset, data: $0, into: &frame) }
      frame.removeFirst(4)
      guard let peer = files.outgoing[id]?.peer.id,
        case .success(let message) = machine.sealTransfer(frame, to: peer, timestamp: Self.unixMilliseconds(), now: now)
      else { return false }
      result = connection.send(message: message)
    }
    guard result == .queued else { return false }
    machine.noteSent(on: route.connection, now: now)
    return true
  }

  // MARK: Rate

  /// Whether `count` more bytes fit ``SessionConfiguration/maximumFileRate`` now (they are
  /// counted); if not, the pump runs again when they will.
  private func withinRate(_ count: Int) -> Bool {
    guard let rate = configuration.maximumFileRate, rate > 0 else { return true }
    let current = now
    let elapsed = current - files.allowanceAt
    let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    let burst = Double(max(transferTuning.chunkSize, Int(rate / 8)))
    files.allowance = min(burst, files.allowance + seconds * Double(rate))
    files.allowanceAt = current
    if files.allowance >= Double(count) {
      files.allowance -= Double(count)
      return true
    }
    if files.rateTimer == nil {
      let wait = Duration.milliseconds(Int64(max(1, (Double(count) - files.allowance) / Double(rate) * 1000)))
      files.rateTimer = loop.schedule(after: wait) { [self] in
        whileOnLoop { session in
          session.files.rateTimer = nil
          session.pumpInTurns()
        }
      }
    }
    return false
  }

  // MARK: Progress

  func outgoingProgress(_ id: TransferID, rate: UInt64) -> TransferProgress {
    let transfer = files.outgoing[id]!
    let totals = transfer.state.totals
    let current = transfer.state.current.map { transfer.state.files[$0].name }
    return TransferProgress(
      id: id, peer: transfer.peer, direction: .send, bytes: totals.done, total: totals.bytes, rate: rate,
      filesDone: transfer.state.verifiedCount, fileCount: transfer.state.wanted.count, currentFile: current, sent: transfer.state.bytesSent)
  }

  func reportProgress(outgoing id: TransferID, force: Bool) {
    guard let transfer = files.outgoing[id], transfer.state.phase == .sending else { return }
    let current = now
    if !force, let last = transfer.meter.lastReported, current - last < transferTuning.progressInterval { return }
    let rate = files.outgoing[id]!.meter.rate(at: current, bytes: transfer.state.totals.done)
    files.outgoing[id]!.meter.lastReported = current
    let progress = outgoingProgress(id, rate: rate)
    if transfer.meter.lastReported == nil { emit(.transfer(.started(progress))) }
    emit(.transfer(.progress(progress)))
    transfer.handle.report(progress)
  }

  /// The last progress of a transfer that ended (a completed one at 100%).
  private func reportFinalProgress(_ transfer: FileTransfers.Outgoing) {
    let totals = transfer.state.totals
    let progress = TransferProgress(
      id: transfer.state.id, peer: transfer.peer, direction: .send, bytes: totals.done, total: totals.bytes, rate: 0,
      filesDone: transfer.state.verifiedCount, fileCount: transfer.state.wanted.count, currentFile: nil, sent: transfer.state.bytesSent)
    if transfer.state.phase == .finished(.completed) { emit(.transfer(.progress(progress))) }
    transfer.handle.report(progress)
  }
}
