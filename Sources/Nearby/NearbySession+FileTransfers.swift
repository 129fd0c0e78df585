import Dispatch
import NearbyCore
import NearbyTransport

/// The machinery of file transfers, on the session's I/O thread: FILE frames in and out, the
/// chunk pump that keeps each connection's queue short (so messages never wait long behind
/// a file), routes coming and going, and the hops to and from each transfer's file queue.
extension NearbySession {
  /// Runs `work` on the session's I/O thread, isolated to the session (dropped once the
  /// session has stopped).
  nonisolated func onLoop(_ work: @escaping @Sendable (isolated NearbySession) -> Void) {
    loop.execute { [self] in whileOnLoop { work($0) } }
  }

  var transferTuning: TransferTuning { configuration.transferTuning }

  // MARK: Lifecycle

  /// At the start of ``run()``: reads the transfers of earlier runs from the state directory
  /// (off the I/O thread); frames that arrive meanwhile wait.
  func startFileTransfers() {
    guard let directory = configuration.identity.directory else {
      files.loaded = true
      return
    }
    DispatchQueue(label: "nearby-files-load").async { [self] in
      let store = try? TransferStore(stateDirectory: directory)
      let loaded = store?.loadAll()
      onLoop { session in session.transfersLoaded(store, loaded?.records ?? [], problems: loaded?.problems ?? []) }
    }
  }

  private func transfersLoaded(_ store: TransferStore?, _ records: [TransferStore.Record], problems: [String]) {
    files.store = store
    for problem in problems { emit(.error(.rejected("file transfers: \(problem)"))) }
    // Oldest first: the closed ones are remembered within bounds, the newest kept.
    for record in records.sorted(by: { $0.updated < $1.updated }) where !files.stopped {
      switch (record.direction, record.status) {
      case (.receive, .active):
        files.restored[record.id] = record
      case (.receive, _):
        forgetRecords(of: files.closed.insert(record.id, peer: record.peer, reason: record.closedWith))
      case (.send, .active):
        let peer = machine.peer(record.peer) ?? Peer(id: record.peer, name: (try? DisplayName(record.peer.shortHex)) ?? DisplayName.placeholder)
        startOutgoing(
          id: record.id, peer: peer, files: record.files, items: record.sources, skipped: [], record: record, queue: FileTransfers.queue(record.id))
      case (.send, _):
        // A CANCEL we could not deliver: it goes out when the receiver can be reached.
        files.cancelOwed[record.id] = record.peer
        if case .success = machine.transferRoute(to: record.peer) { transferPeerReachable(record.peer) }
      }
    }
    files.loaded = true
    let waiting = files.pending
    files.pending = []
    files.pendingBytes = 0
    for (frame, peer, carrier) in waiting { transferFrameArrived(frame, from: peer, via: carrier) }
  }

  /// At shutdown: transfers stop where they are (they resume in a later run); whoever waits
  /// for one is told that the session stopped.
  func stopFileTransfers() {
    files.stopped = true
    if let timer = files.timer { loop.cancelTimer(timer) }
    if let timer = files.rateTimer { loop.cancelTimer(timer) }
    files.timer = nil
    files.rateTimer = nil
    for (_, transfer) in files.outgoing { transfer.handle.finish(nil) }
    files.outgoing = [:]
    files.incoming = [:]
  }

  func ensureTransferTimer() {
    guard files.timer == nil, !files.stopped, !files.isIdle else { return }
    files.timer = loop.schedule(after: transferTuning.progressInterval) { [self] in
      whileOnLoop { session in
        session.files.timer = nil
        session.transferTick()
        session.ensureTransferTimer()
      }
    }
  }

  /// Progress for quiet transfers, and stalls on lossy routes.
  private func transferTick() {
    let current = now
    for id in Array(files.outgoing.keys) {
      guard let transfer = files.outgoing[id] else { continue }
      if transfer.relayed {
        var actions: [OutgoingTransferState.Action] = []
        files.outgoing[id]!.state.tick(now: current, stall: transferTuning.stall, into: &actions)
        performOutgoing(id, actions)
      }
      if files.outgoing[id] != nil { reportProgress(outgoing: id, force: false) }
    }
    for id in Array(files.incoming.keys) { reportProgress(incoming: id, force: false) }
  }

  // MARK: Routes

  /// A session with `peer` started, or it became reachable through a relay: our unfinished
  /// offers to it go out again (its answer says where to resume), and a CANCEL we owe it.
  func transferPeerReachable(_ peer: PeerID) {
    guard files.loaded, !files.stopped else { return }
    for (id, transfer) in files.outgoing where transfer.peer.id == peer && !transfer.state.isFinished {
      if let known = machine.peer(peer) { files.outgoing[id]!.peer = known }
      files.outgoing[id]!.relayed = { if case .success(.relayed) = machine.transferRoute(to: peer) { true } else { false } }()
      files.outgoing[id]!.state.window = files.outgoing[id]!.relayed ? transferTuning.relayedWindow : transferTuning.directWindow
      _ = sendFileFrame(offerFrame(id), id, to: peer)
    }
    for (id, owed) in files.cancelOwed where owed == peer {
      if sendFileFrame(.cancel(.cancelled, "cancelled by \(configuration.peer.name.value)"), id, to: peer) {
        files.cancelOwed[id] = nil
        files.store?.remove(id, .send)
      }
    }
    for (id, transfer) in files.incoming where transfer.peer.id == peer {
      if let known = machine.peer(peer) { files.incoming[id]!.peer = known }
    }
  }

  /// The session with `peer` ended or it became unreachable: unless another route remains,
  /// our transfers to it pause (chunks in flight are lost; the next OFFER resumes them).
  func transferPeerLost(_ peer: PeerID) {
    var concerned = false
    for (id, transfer) in files.outgoing where transfer.peer.id == peer && !transfer.state.isFinished {
      concerned = true
      files.outgoing[id]!.state.routeLost()
      files.outgoing[id]!.generation += 1
      files.outgoing[id]!.ready = []
      files.outgoing[id]!.readDone = true
    }
    // Whether another route remains matters only to transfers with this peer. (Asked for
    // every lost peer, the answer's error text was built for each of a flooder's thousands.)
    guard concerned || files.cancelOwed.values.contains(peer) else { return }
    if case .success = machine.transferRoute(to: peer) { transferPeerReachable(peer) }
  }

  /// A connection's queue drained: transfers routed on it add chunks, in turns.
  func transferConnectionReady(_ id: ConnectionID) { pumpInTurns(on: id) }

  /// Transfers (those routed on connection `id`, or all) add chunks one each in turn, so
  /// that they share the queue and the rate (the first in the dictionary's order took all of
  /// either, and the others waited for its window to fill), starting one further along each
  /// time.
  func pumpInTurns(on id: ConnectionID? = nil) {
    var sharing = files.outgoing.keys.filter { transfer in
      guard let id else { return true }
      guard let outgoing = files.outgoing[transfer], case .success(let route) = inspect({ $0.transferRoute(to: outgoing.peer.id) }) else {
        return false
      }
      return route.connection == id
    }
    guard !sharing.isEmpty else { return }
    sharing.sort()
    files.turn &+= 1
    let first = Int(files.turn % UInt64(sharing.count))
    sharing = Array(sharing[first...] + sharing[..<first])
    while !sharing.isEmpty {
      sharing = sharing.filter { pump($0, limit: 1) }
    }
  }

  // MARK: Frames

  /// Sends a FILE frame to `peer`: on its session, or sealed through its relay. Control frames
  /// are small and never refused by a full queue.
  /// - Returns: whether it was queued (without a route it is dropped: the resume repairs it).
  @discardableResult
  func sendFileFrame(_ body: TransferFrame.Body, _ id: TransferID, to peer: PeerID) -> Bool {
    guard case .success(let route) = inspect({ $0.transferRoute(to: peer) }), let connection = connections[route.connection] else { return false }
    let frame = Frame.file(TransferFrame(id, body))
    let result: TCPConnection.QueueResult
    switch route {
    case .direct:
      result = connection.enqueue(force: true) { FrameEncoder.encode(frame, into: &$0) }
    case .relayed:
      var bytes = FrameEncoder.encode(frame)
      bytes.removeFirst(4)
      guard case .success(let message) = machine.sealTransfer(bytes, to: peer, timestamp: Self.unixMilliseconds(), now: now) else { return false }
      result = connection.enqueue(force: true) { FrameEncoder.encodeMessage(message, into: &$0) }
    }
    machine.noteSent(on: route.connection, now: now)
    return result == .queued
  }

  /// About what a FILE frame holds, in bytes (what it costs to keep it waiting).
  static func approximateSize(of frame: TransferFrame) -> Int {
    switch frame.body {
    case .offer(let files): files.reduce(64) { $0 + 32 + $1.name.utf8.count }
    case .accept(let files): 64 + 16 * files.count
    case .chunk(_, _, let data): 64 + data.count
    case .cancel(_, let message): 64 + message.utf8.count
    case .end, .ack, .resend, .verified: 64
    }
  }

  /// A FILE frame from `peer` (on its session, or opened from its envelope), carried by
  /// connection `carrier`.
  func transferFrameArrived(_ frame: TransferFrame, from peer: PeerID, via carrier: ConnectionID) {
    guard !files.stopped else { return }
    guard files.loaded else {
      let bytes = Self.approximateSize(of: frame)
      if files.pending.count < FileTransfers.pendingLimit.frames, files.pendingBytes + bytes <= FileTransfers.pendingLimit.bytes {
        files.pending.append((frame, peer, carrier))
        files.pendingBytes += bytes
      }
      return
    }
    let id = frame.transfer
    if let transfer = files.outgoing[id] {
      guard transfer.peer.id == peer else { return refuseForeign(id, peer) }
      var actions: [OutgoingTransferState.Action] = []
      files.outgoing[id]!.state.receive(frame.body, now: now, into: &actions)
      performOutgoing(id, actions)
      return
    }
    if let transfer = files.incoming[id] {
      guard transfer.peer.id == peer else { return refuseForeign(id, peer) }
      var actions: [IncomingTransferState.Action] = []
      files.incoming[id]!.state.receive(frame.body, now: now, into: &actions)
      performIncoming(id, actions)
      return
    }
    switch frame.body {
    case .offer(let offered): offerArrived(id, offered, from: peer, via: carrier)
    case .cancel:
      // The end of something we no longer (or never) had: nothing to answer.
      break
    default:
      // Bytes or answers for a transfer we do not know (one we forgot, or never had).
      if let closed = files.closed[id], closed.peer == peer {
        if closed.reason != 0 { sendFileFrame(.cancel(TransferCancelReason(rawValue: closed.reason), "that transfer is over"), id, to: peer) }
      } else {
        sendFileFrame(.cancel(.unknownTransfer, "no transfer \(id.shortHex) here"), id, to: peer)
      }
    }
  }

  private func refuseForeign(_ id: TransferID, _ peer: PeerID) {
    sendFileFrame(.cancel(.invalid, "transfer \(id.shortHex) belongs to another peer"), id, to: peer)
  }

  // MARK: Persistence

  /// Saves a record on the transfer's queue (off the I/O thread).
  func persist(_ record: TransferStore.Record, on queue: DispatchQueue) {
    guard let store = files.store else { return }
    queue.async { try? store.save(record) }
  }

  /// Removes the records of received transfers that ended and are no longer remembered
  /// (``ClosedTransfers`` keeps a peer's latest 256, 4 096 in all). Without it a peer whose
  /// files are taken automatically left a record per offer, each up to megabytes, until it
  /// was a week old.
  func forgetRecords(of ids: [TransferID]) {
    for id in ids { forget(id, .receive, on: FileTransfers.queue(id)) }
  }

  func forget(_ id: TransferID, _ direction: TransferDirection, on queue: DispatchQueue) {
    guard let store = files.store else { return }
    queue.async { store.remove(id, direction) }
  }
}

extension DisplayName {
  /// A name for a peer known only by its id (a transfer restored before it was met again).
  static let placeholder = try! DisplayName("peer")
}
