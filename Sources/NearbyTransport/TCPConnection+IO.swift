import CNearbySystem
import NearbyCore
import NearbyCrypto
import NearbySystem
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// The loop thread's side of a connection: writing (handshake bytes, then sealed records),
/// reading (handshake messages, then records opened into the frame decoder), and closing.
extension TCPConnection {
  package func handle(events: UInt32) {
    if events & NEARBY_EPOLLOUT != 0 { flush() }
    if events & (NEARBY_EPOLLIN | NEARBY_EPOLLRDHUP | NEARBY_EPOLLHUP | NEARBY_EPOLLERR) != 0, isOpen, !readingPaused {
      readAvailable()
    }
  }

  // MARK: Writing

  /// Queues bytes that go to the socket as they are (handshake messages, or the ERROR that
  /// answers a failed handshake) ahead of anything queued later, and writes them.
  func writeRaw(_ bytes: [UInt8]) {
    guard !bytes.isEmpty, isOpen else { return }
    outbound.withLock { $0.queuedBytes += bytes.count }
    writing.append(contentsOf: bytes)
    flush()
  }

  func flush() {
    guard isOpen else { return }
    var batch = 0
    while true {
      if writeOffset == writing.count {
        batch += writing.count
        // The buffers keep their capacity while traffic is heavy (a fresh allocation per
        // batch costs page faults on every byte), within what the queue limit allows.
        writing.removeAll(keepingCapacity: writing.capacity <= bufferCapacityLimit)
        writeOffset = 0
        if !takeQueued() {
          if watching & NEARBY_EPOLLOUT != 0 {
            watching &= ~NEARBY_EPOLLOUT
            updateInterest()
          }
          // Light traffic: large buffers are not worth keeping (an idle session stays small).
          // Only after several light flushes in a row: heavy traffic has light flushes too
          // (the rest of a partial write), and a buffer of megabytes dropped there is mapped
          // and faulted in again, page by page, by the next batch.
          if batch < 65_536 {
            lightFlushes += 1
            if lightFlushes >= 8 {
              if writing.capacity > 65_536 { writing = [] }
              if sealing.capacity > 65_536 { sealing = [] }
            }
          } else {
            lightFlushes = 0
          }
          return
        }
      }
      let result = writing.withUnsafeBytes { raw -> Result<IOResult<Int>, SystemError> in
        let pending = UnsafeRawBufferPointer(rebasing: raw[writeOffset...])
        return Result { () throws(SystemError) in
          try systemCall("send") { Glibc.send(fd, pending.baseAddress, pending.count, Int32(MSG_NOSIGNAL)) }
        }
      }
      switch result {
      case .success(.done(let written)):
        writeOffset += written
        let notify = outbound.withLock { state -> Bool in
          state.queuedBytes -= written
          if state.wasFull && state.queuedBytes < maximumQueuedBytes / 2 {
            state.wasFull = false
            state.lowWater = 0
            return true
          }
          if state.lowWater > 0 && state.queuedBytes < state.lowWater {
            state.lowWater = 0
            return true
          }
          return false
        }
        if notify { sink(.writable(id)) }
      case .success(.wouldBlock):
        if watching & NEARBY_EPOLLOUT == 0 {
          watching |= NEARBY_EPOLLOUT
          updateInterest()
        }
        return
      case .failure(let error):
        fail("\(error)")
        return
      }
    }
  }

  /// Moves what other threads queued into ``writing``: sealed into records (as much as is
  /// queued in one go, up to 64 KiB per record) once the handshake is done, then the CLOSE
  /// record and the shutdown of the write side when the connection is closing.
  /// - Returns: whether there is something to write.
  ///
  /// Nothing queued is ever written in plaintext: before the handshake completes, frames
  /// wait for it (it flushes when it does), and so does a shutdown, unless the handshake
  /// failed. (The one plaintext frame of that phase, ERROR, goes through
  /// ``sendPlaintextError(_:)``.)
  private func takeQueued() -> Bool {
    guard let sealer = channel.sealer else {
      let shutdown = outbound.withLock { state -> Bool in
        state.flushScheduled = false
        return state.shutdownAfterFlush && channel.failed
      }
      if shutdown { shutDownWriting() }
      return false
    }
    let (taken, shutdown) = outbound.withLock { state -> (Bool, Bool) in
      if state.buffer.isEmpty {
        state.flushScheduled = false
        return (false, state.shutdownAfterFlush)
      }
      swap(&state.buffer, &sealing)
      state.queuedBytes += RecordSealer.sealedCount(plaintextCount: sealing.count) - sealing.count
      return (true, false)
    }
    if taken {
      sealing.withUnsafeBytes { sealer.seal($0, into: &writing) }
      sealing.removeAll(keepingCapacity: sealing.capacity <= bufferCapacityLimit)
      return true
    }
    guard shutdown else { return false }
    if !closeRecordSent {
      closeRecordSent = true
      let before = writing.count
      sealer.close(into: &writing)
      outbound.withLock { $0.queuedBytes += writing.count - before }
      return true
    }
    shutDownWriting()
    return false
  }

  private func shutDownWriting() {
    outbound.withLock { $0.shutdownAfterFlush = false }
    _ = Glibc.shutdown(fd, Int32(SHUT_WR))
  }

  /// The largest buffer capacity kept between batches: a full queue, sealed.
  var bufferCapacityLimit: Int { max(1 << 20, 2 * maximumQueuedBytes + 65_536) }

  /// Whether the handshake authenticated the peer (records flow). Loop thread only.
  package var isAuthenticated: Bool { channel.isEstablished }

  /// Sends an ERROR before the handshake completed (a refusal such as `busy`, or the
  /// handshake timeout): the only frame of that phase that travels in plaintext, since the
  /// peer cannot read records yet. It ends the handshake. Loop thread only.
  package func sendPlaintextError(_ frame: Frame) {
    precondition(loop.isCurrent, "sendPlaintextError must run on the event loop")
    guard case .error = frame, !channel.isEstablished else {
      preconditionFailure("only an ERROR goes out in plaintext, and only before the handshake completes")
    }
    channel.abandon()
    writeRaw(FrameEncoder.encode(frame))
  }

  // MARK: Reading

  /// Reads and decodes what arrived, within this connection's share of one loop iteration
  /// (``ReceiveLimits``), then tells the receive budget what is left half received.
  func readAvailable() {
    readTurn()
    accountPartialFrames()
  }

  private func readTurn() {
    var batch = spareFrames
    spareFrames = []
    defer {
      // Kept for the next turn when small (a heap allocation per turn otherwise; a large
      // one is not worth keeping for an idle connection).
      if batch.isEmpty, batch.capacity <= 16 { spareFrames = batch }
    }
    let frameLimit = limits.framesPerTurn
    if leftoverFrames, isOpen, !readingPaused, !discarding {
      // The previous turn stopped at its frame limit: finish what is buffered first.
      leftoverFrames = false
      guard decodeFrames(into: &batch, limit: frameLimit) else { return }
    }
    var bytesLeft = limits.bytesPerTurn
    reading: while bytesLeft > 0, !leftoverFrames, isOpen, !readingPaused {
      var result: Result<IOResult<Int>, SystemError> = .success(.wouldBlock)
      var requested = 0
      // A closure literal passed straight on: a closure in a constant escapes (its captures
      // were three heap allocations per turn), and a local function passed as a value
      // still boxed `result` and `requested` (two).
      if let opener = channel.opener, !discarding {
        opener.withWritableBytes(minimumCount: 16_384) { space in
          requested = space.count
          result = Self.readOnce(fd, into: space)
          if case .success(.done(let count)) = result { return count }
          return 0
        }
      } else {
        // Handshake bytes are taken at once, and discarded ones are dropped: the loop's
        // scratch buffer holds them, not one of each connection.
        requested = loop.scratch.count
        result = Self.readOnce(fd, into: loop.scratch)
      }
      switch result {
      case .success(.done(0)):
        deliver(&batch)
        endOfStream()
        return
      case .success(.done(let count)):
        lastReadSize = count
        bytesLeft -= count
        if !channel.isEstablished && !channel.failed {
          // Even while closing: what is queued goes out once the handshake completes.
          guard receiveHandshake(UnsafeRawBufferPointer(rebasing: loop.scratch[0..<count])) else { return }
        } else if discarding {
          continue
        }
        if discarding { continue }
        guard openRecords(into: &batch, limit: frameLimit) else { return }
        // A short read emptied the socket: the fd is level-triggered, so epoll reports what
        // arrives next, and a second `read` that would only say EAGAIN is saved.
        if count < requested {
          // Light traffic: read buffers are not worth keeping (an idle session stays small).
          if count < 4096 {
            decoder.shrinkIfEmpty()
            channel.opener?.shrinkIfEmpty()
          }
          break reading
        }
      case .success(.wouldBlock):
        break reading
      case .failure(let error):
        deliver(&batch)
        fail("\(error)")
        return
      }
    }
    // Bytes left in the socket make epoll report it again; frames left in the decoder need
    // a turn of their own, after the other connections had theirs.
    if leftoverFrames { scheduleNextTurn() }
    deliver(&batch)
  }

  /// One `read(2)` into `space`.
  private static func readOnce(_ fd: Int32, into space: UnsafeMutableRawBufferPointer) -> Result<IOResult<Int>, SystemError> {
    Result { () throws(SystemError) in
      try systemCall("read") { Glibc.read(fd, space.baseAddress, space.count) }
    }
  }

  private func scheduleNextTurn() {
    guard !turnScheduled else { return }
    turnScheduled = true
    loop.execute { [self] in
      turnScheduled = false
      if isOpen, !readingPaused { readAvailable() }
    }
  }

  /// Tells the receive budget how much this connection holds in frames (and records) that
  /// have not arrived completely; over the budget, it may close the largest holders.
  func accountPartialFrames() {
    guard let budget = limits.budget else { return }
    let held = isOpen && !discarding ? decoder.bufferedByteCount + (channel.opener?.bufferedByteCount ?? 0) : 0
    budget.update(self, from: heldPartialBytes, to: held)
  }

  /// The receive budget closes this connection: it stops reading (what still arrives is
  /// discarded), gives back what it buffered, and the owner sends ERROR
  /// `resourceExhausted` and closes.
  func exhaustReceiveBudget(_ detail: String) {
    guard isOpen, !discarding else { return }
    discarding = true
    leftoverFrames = false
    decoder.reset()
    channel.dropOpener()
    sink(.resourceExhausted(id, detail))
  }

  /// Feeds handshake bytes. - Returns: `false` when the handshake failed (the connection
  /// then only waits to be closed).
  private func receiveHandshake(_ bytes: UnsafeRawBufferPointer) -> Bool {
    switch channel.receiveHandshake(bytes) {
    case .progress(let send):
      writeRaw(send)
      return true
    case .completed(let send, let peer, let remaining):
      writeRaw(send)
      sink(.authenticated(id, peer))
      channel.opener?.append(remaining)
      // Frames queued while the handshake ran go out now, sealed.
      flush()
      return isOpen
    case .failed(let send, let failure):
      writeRaw(send)
      discarding = true
      sink(.securityFailed(id, failure))
      return false
    }
  }

  /// Opens every complete record into the frame decoder and decodes its frames (at most
  /// `limit` in `batch`).
  /// - Returns: `false` after an error (reported; the connection is to be closed).
  private func openRecords(into batch: inout [Frame], limit: Int) -> Bool {
    guard let opener = channel.opener else { return true }
    do throws(RecordError) {
      while try opener.openNext({ plaintext in
        decoder.withWritableBytes(minimumCount: plaintext.count) { space in
          space.copyMemory(from: plaintext)
          return plaintext.count
        }
      }) {}
    } catch {
      // Frames complete before the bad record are good: they were authenticated.
      guard decodeFrames(into: &batch, limit: .max) else { return false }
      deliver(&batch)
      discarding = true
      sink(.securityFailed(id, SecureChannel.failure(error)))
      return false
    }
    return decodeFrames(into: &batch, limit: limit)
  }

  /// Decodes complete frames into `batch` until it holds `limit`; ``leftoverFrames`` says
  /// when it stopped there.
  private func decodeFrames(into batch: inout [Frame], limit: Int) -> Bool {
    do {
      while batch.count < limit, let frame = try decoder.next() { batch.append(frame) }
      if batch.count >= limit { leftoverFrames = true }
      return true
    } catch {
      deliver(&batch)
      discarding = true
      decoder.reset()
      sink(.decodingFailed(id, error))
      return false
    }
  }

  /// Hands the frames to the sink and leaves `batch` empty, with its storage when small
  /// (the sink runs on this thread and is done with the frames when it returns).
  func deliver(_ batch: inout [Frame]) {
    guard !batch.isEmpty else { return }
    var frames: [Frame] = []
    swap(&frames, &batch)
    sink(.frames(id, frames))
    if frames.capacity <= 16 {
      frames.removeAll(keepingCapacity: true)
      batch = frames
    }
  }

  private func endOfStream() {
    var detail = "the peer closed the connection"
    if !discarding {
      if let opener = channel.opener {
        do throws(RecordError) {
          try opener.finish()
        } catch {
          detail = "\(error)"
        }
        if opener.isClosed {
          do throws(FrameDecodingError) {
            try decoder.finish()
          } catch {
            detail = "\(error)"
          }
        }
      } else if let failure = channel.connectionClosed() {
        detail = failure.description
      }
    }
    closeNow()
    sink(.closed(id, detail))
  }

  func fail(_ detail: String) {
    closeNow()
    sink(.closed(id, detail))
  }

  func updateInterest() {
    guard isOpen else { return }
    var events = watching
    if readingPaused { events &= ~(NEARBY_EPOLLIN | NEARBY_EPOLLRDHUP) }
    loop.reregister(fd, events: events)
  }

  func closeNow() {
    guard isOpen else { return }
    isOpen = false
    outbound.withLock { state in
      state.closed = true
      state.buffer = []
      state.queuedBytes = 0
    }
    loop.deregister(fd)
    Glibc.close(fd)
    decoder.reset()
    writing = []
    sealing = []
    leftoverFrames = false
    accountPartialFrames()
  }
}
