import CNearbySystem
import NearbyCore
import NearbyCrypto
import NearbySystem

#if canImport(Glibc)
  import Glibc
#endif

/// The loop thread's reading side of a connection: handshake messages, then records opened
/// into the frame decoder, in turns bounded by ``ReceiveLimits``; and closing, which an end
/// of stream or a failed read leads to. (Writing is in TCPConnection+IO.swift.)
extension TCPConnection {
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
    turnWork = 0
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
        // A run of reads that come back to back (a few loop iterations apart: an exchange
        // of requests and answers) keeps the read buffers, which go once the connection has
        // been idle from one session tick to the next (``trimIfIdle()``); freeing them after
        // each short read allocated and freed 16 KiB per small message. Other reads that
        // empty the socket free them at once, as before: a heartbeat among hundreds of idle
        // peers, or the few frames that open a session (kept until the next tick, those of
        // 200 peers connecting at once nearly doubled the memory of each idle session).
        if loop.iteration &- lastReadIteration <= limits.backToBackIterations {
          backToBackReads &+= 1
        } else {
          backToBackReads = 0
        }
        lastReadIteration = loop.iteration
        readSinceTrim = true
        // A short read emptied the socket: the fd is level-triggered, so epoll reports what
        // arrives next, and a second `read` that would only say EAGAIN is saved.
        if count < requested {
          if backToBackReads < Self.keepingRun, count < 4096 {
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

  /// Back-to-back reads after which the read buffers are kept (see `readTurn`).
  static let keepingRun = 16

  /// Frees the read buffers (what is buffered stays) if nothing was read since the last
  /// call: the session calls it on its ticks (at most a quarter second apart), so an idle
  /// connection holds no read buffer after half a second, whatever its last read was.
  package func trimIfIdle() {
    guard !readSinceTrim else {
      readSinceTrim = false
      return
    }
    decoder.shrinkIfEmpty()
    channel.opener?.shrinkIfEmpty()
  }

  /// The bytes of the record layer's read buffer, on the loop. (The frame decoder keeps a
  /// buffer of up to 64 KiB in any case.)
  package var recordBufferBytes: Int { channel.opener?.allocatedByteCount ?? 0 }

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

  /// Decodes complete frames into `batch` until their work this turn reaches `limit`
  /// (``Frame/receiveWork``: a ROSTER of thousands of entries is a turn's work on its own,
  /// not one frame; four of them in one turn held a relay's loop for a second in a debug
  /// build, long enough under load for its peers to miss its pings). ``leftoverFrames`` says
  /// when it stopped there.
  private func decodeFrames(into batch: inout [Frame], limit: Int) -> Bool {
    do {
      while turnWork < limit, let frame = try decoder.next() {
        turnWork += frame.receiveWork
        batch.append(frame)
      }
      if turnWork >= limit { leftoverFrames = true }
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
    queue.closed()
    loop.deregister(fd)
    Glibc.close(fd)
    decoder.reset()
    writing = []
    sealing = []
    leftoverFrames = false
    accountPartialFrames()
  }
}
