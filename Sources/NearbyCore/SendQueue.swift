/// The send side of one connection as a state machine with no I/O: what is queued, how many
/// bytes are on their way, and what the connection must do next. The connection (on its
/// loop thread, the only one that touches it) tells it what happened and performs what it
/// answers, as it does with ``ConnectionStateMachine`` for frames.
///
/// Bytes pass three stages, and ``queuedBytes`` counts them all until written, so the
/// limit bounds what a peer that stops reading costs:
/// 1. encoded frames queue here in plaintext (``enqueue(limit:_:)``);
/// 2. the connection takes them in one batch to seal into a record (``nextBatch(canSeal:handshakeFailed:swappingWith:)``,
///    then ``sealed(plaintextCount:sealedCount:)``);
/// 3. the sealed bytes are written (``wrote(_:)``).
///
/// Closing: `.now` refuses new frames at once, and everything queued is dropped when the
/// socket closes (``closed()``); `.shutdownAndLinger` refuses new frames, lets what is queued
/// go out, then asks for the CLOSE record and the shutdown of the write side.
package struct SendQueue: Sendable {
  /// What ``enqueue(limit:_:)`` did.
  package enum EnqueueResult: Hashable, Sendable {
    /// Queued. `scheduleFlush`: nothing was waiting to be flushed, so the connection must
    /// arrange a flush (one per batch: frames queued meanwhile go with it).
    case queued(scheduleFlush: Bool)
    /// More than the limit is queued: the peer reads too slowly. Nothing was queued.
    case full
    /// The connection is closing or closed. Nothing was queued.
    case closed
  }

  /// What to write next, once everything taken before is written.
  package enum Batch: Hashable, Sendable {
    /// Seal the bytes swapped into the caller's buffer, write them.
    case seal
    /// Closing, and everything queued is written: seal the CLOSE record, write it.
    case closeRecord
    /// Closing, and the last record is written: shut down the write side.
    case shutDown
    /// Nothing to write.
    case idle
  }

  /// What ``close(_:)`` asks of the connection.
  package enum CloseStep: Hashable, Sendable {
    /// Close the socket now (then call ``SendQueue/closed()``: what is queued is dropped).
    case closeNow
    /// Flush what is queued (it will end with ``Batch/closeRecord`` and ``Batch/shutDown``)
    /// and discard what still arrives until the peer closes.
    case flushAndLinger
  }

  private enum Phase: Hashable, Sendable {
    case open
    /// `.shutdownAndLinger` was asked: nothing new is queued.
    case closing(closeRecordTaken: Bool)
    /// The write side is shut down.
    case shutDown
    case closed
  }

  /// The usual limit of ``enqueue(limit:_:)``, and what "writable" is measured against:
  /// the connection reports writable once fewer than half of it are queued.
  package let limit: Int
  /// Bytes queued and not yet written: the plaintext waiting, plus the sealed bytes taken.
  package private(set) var queuedBytes = 0
  /// Encoded frames not yet taken for sealing.
  package private(set) var plaintext: [UInt8] = []
  /// A flush is on its way (asked by an ``enqueue(limit:_:)``, or writing): frames queued
  /// meanwhile need no other.
  private var flushScheduled = false
  private var phase = Phase.open
  /// A sender was refused or asked to be told: report writable below half the limit.
  private var wasFull = false
  /// Report writable once fewer than this are queued (0: no).
  private var lowWater = 0

  package init(limit: Int) {
    self.limit = limit
  }

  /// Whether frames are refused (closing or closed).
  package var refusesFrames: Bool { phase != .open }

  /// Appends bytes with `encode` unless `limit` bytes or more are queued already (a frame
  /// may take the queue past its limit: the limit is checked before, as a socket buffer's).
  package mutating func enqueue(limit: Int, _ encode: (inout [UInt8]) -> Void) -> EnqueueResult {
    guard phase == .open else { return .closed }
    guard queuedBytes < limit else {
      wasFull = true
      return .full
    }
    let before = plaintext.count
    encode(&plaintext)
    queuedBytes += plaintext.count - before
    if flushScheduled { return .queued(scheduleFlush: false) }
    flushScheduled = true
    return .queued(scheduleFlush: true)
  }

  /// Bytes the connection writes as they are (the handshake's), counted until written.
  package mutating func queuedUnsealed(_ count: Int) {
    queuedBytes += count
  }

  /// Everything taken before is written: what comes next. With `.seal`, the queued
  /// plaintext is in `buffer` (which must be empty: its capacity is kept for the next batch).
  /// - Parameters:
  ///   - canSeal: the handshake is done (records can be sealed); before, frames wait.
  ///   - handshakeFailed: the handshake failed: no record will ever be sealed, so a closing
  ///     connection shuts down without its CLOSE record.
  package mutating func nextBatch(canSeal: Bool, handshakeFailed: Bool, swappingWith buffer: inout [UInt8]) -> Batch {
    precondition(buffer.isEmpty, "the buffer the queued bytes are swapped into must be empty")
    guard canSeal else {
      flushScheduled = false
      guard case .closing = phase, handshakeFailed else { return .idle }
      phase = .shutDown
      return .shutDown
    }
    if !plaintext.isEmpty {
      swap(&plaintext, &buffer)
      return .seal
    }
    flushScheduled = false
    switch phase {
    case .closing(closeRecordTaken: false):
      phase = .closing(closeRecordTaken: true)
      return .closeRecord
    case .closing(closeRecordTaken: true):
      phase = .shutDown
      return .shutDown
    case .open, .shutDown, .closed:
      return .idle
    }
  }

  /// A batch of `plaintextCount` bytes became `sealedCount` bytes of records (or the CLOSE
  /// record: plaintext 0).
  package mutating func sealed(plaintextCount: Int, sealedCount: Int) {
    queuedBytes += sealedCount - plaintextCount
  }

  /// `count` bytes were written.
  /// - Returns: whether to report writable: the queue drained below half the limit after
  ///   a sender was refused (or asked), or below a low-water mark asked for.
  package mutating func wrote(_ count: Int) -> Bool {
    precondition(count >= 0 && count <= queuedBytes, "wrote \(count) bytes of \(queuedBytes) queued")
    queuedBytes -= count
    if wasFull && queuedBytes < limit / 2 {
      wasFull = false
      lowWater = 0
      return true
    }
    if lowWater > 0 && queuedBytes < lowWater {
      lowWater = 0
      return true
    }
    return false
  }

  /// Asks to be told (``wrote(_:)`` returns true) once fewer than half the limit are queued.
  /// - Returns: `false` if that is so already, or the connection is closing: nothing will
  ///   be told then.
  package mutating func notifyWhenWritable() -> Bool {
    guard phase == .open, queuedBytes >= limit / 2 else { return false }
    wasFull = true
    return true
  }

  /// Asks to be told once fewer than `threshold` bytes are queued.
  /// - Returns: `false` if that is so already, or the connection is closing.
  package mutating func notifyWhenQueued(below threshold: Int) -> Bool {
    guard phase == .open, queuedBytes >= threshold else { return false }
    lowWater = max(lowWater, threshold)
    return true
  }

  /// Asks to close. - Returns: what the connection must do, or `nil` (closed already, or
  /// closing already and asked to linger again).
  package mutating func close(_ mode: CloseAction) -> CloseStep? {
    switch (phase, mode) {
    case (.closed, _): return nil
    case (_, .now):
      // Refused from now on; what is queued and being written stays counted until the socket
      // closes (``closed()``): the connection may still write in between.
      phase = .closed
      wasFull = false
      lowWater = 0
      return .closeNow
    case (.open, .shutdownAndLinger):
      phase = .closing(closeRecordTaken: false)
      return .flushAndLinger
    case (.closing, .shutdownAndLinger), (.shutDown, .shutdownAndLinger):
      return nil
    }
  }

  /// The socket is closed (asked, or the peer or an error closed it): what was queued is
  /// dropped.
  package mutating func closed() {
    phase = .closed
    plaintext = []
    queuedBytes = 0
    flushScheduled = false
    wasFull = false
    lowWater = 0
  }
}
