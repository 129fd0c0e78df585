import CNearbySystem
import NearbyCore
import NearbySystem

#if canImport(Glibc)
  import Glibc
#endif

/// What the transport reports to its owner, in order per connection.
package enum TransportEvent: Sendable {
  /// A peer connected to our listener.
  case accepted(TCPConnection)
  /// Our outbound connection is up.
  case connected(TCPConnection)
  /// No endpoint answered.
  case connectFailed(ConnectionID, String)
  /// The handshake authenticated the peer (PROTOCOL.md, version 2); frames follow.
  case authenticated(ConnectionID, AuthenticatedPeer)
  /// The handshake or the record stream failed: the connection is unusable. Close it
  /// (with ``SecurityFailure/answer`` as ERROR first, when there is one).
  case securityFailed(ConnectionID, SecurityFailure)
  /// Frames received, in order.
  case frames(ConnectionID, [Frame])
  /// The peer's bytes are not valid frames (frames before the error were delivered).
  case decodingFailed(ConnectionID, FrameDecodingError)
  /// EOF or a socket error.
  case closed(ConnectionID, String)
  /// The send queue drained below its low-water mark after having been full.
  case writable(ConnectionID)
  /// The connection held more of the receive budget (``ReceiveBudget``) than any other
  /// when all together held too much: it reads nothing more. Send ERROR
  /// `resourceExhausted` and close it.
  case resourceExhausted(ConnectionID, String)
}

/// Receives transport events; called from the event loop thread.
package typealias TransportSink = @Sendable (TransportEvent) -> Void

/// A non-blocking TCP connection driven by an ``EventLoop``, authenticated and encrypted
/// (PROTOCOL.md, version 2: there is no plaintext mode).
///
/// It starts with the handshake of ``SecureChannel``; once the peer is authenticated
/// (``TransportEvent/authenticated(_:_:)``), frames travel in records. Everything happens on
/// the loop's thread, which alone owns the connection: its owner queues frames there, and
/// the loop seals what is queued into records and writes them, many frames per record and
/// per `send(2)` (``SendQueue`` decides what goes next), and opens and decodes what arrives. The send queue is
/// bounded: a frame that does not fit is refused, so a peer that stops reading costs
/// bounded memory. Frames queued before the handshake completes wait for it.
package final class TCPConnection: EventLoopHandler, @unchecked Sendable {
  /// The outcome of queueing a frame.
  package enum QueueResult: Sendable, Equatable {
    case queued
    /// The queue holds more than its limit: the peer reads too slowly.
    case full
    /// The connection is closing or closed.
    case closed
  }

  package let id: ConnectionID
  package let remote: SocketAddress
  package let loop: EventLoop
  /// The most bytes the send queue holds before refusing frames.
  package let maximumQueuedBytes: Int
  /// What it may read per loop iteration, and the receive budget it shares.
  let limits: ReceiveLimits
  let fd: Int32
  /// Where its events go: its owner (a ``TCPConnector`` watches the handshake first when
  /// it has other endpoints to try, then hands the connection over). Loop thread only.
  @exclusivity(unchecked) var sink: TransportSink

  // Loop thread only.
  /// What is queued to send, and what to write next.
  @exclusivity(unchecked) var queue: SendQueue
  /// Its large buffers are mapped: see ``BufferAllocator/mappingLarge``.
  let decoder = FrameDecoder(allocator: .mappingLarge)
  // The stored properties below are `@exclusivity(unchecked)`: only the loop thread uses them,
  // and the runtime's check of every access to a class's property was about a tenth of the
  // instructions of a message's round trip (callgrind; see the README's benchmarks).
  @exclusivity(unchecked) var channel: SecureChannel
  /// Bytes on their way to the socket: handshake messages, then records.
  @exclusivity(unchecked) var writing: [UInt8] = []
  @exclusivity(unchecked) var writeOffset = 0
  /// Queued plaintext taken from ``queue`` to be sealed.
  @exclusivity(unchecked) var sealing: [UInt8] = []
  /// Flushes in a row that wrote little (the write buffers shrink after a few).
  @exclusivity(unchecked) var lightFlushes = 0
  @exclusivity(unchecked) var watching: UInt32 = 0
  @exclusivity(unchecked) var readingPaused = false
  @exclusivity(unchecked) var discarding = false
  @exclusivity(unchecked) var isOpen = true
  @exclusivity(unchecked) var lastReadSize = 0
  /// The last turn stopped at its frame limit with frames still in the decoder.
  @exclusivity(unchecked) var leftoverFrames = false
  /// Something was read since the last ``trimIfIdle()``.
  @exclusivity(unchecked) var readSinceTrim = false
  /// The loop's ``EventLoop/iteration`` of the last read, and how many reads in a row came
  /// back to back (``ReceiveLimits/backToBackIterations``).
  @exclusivity(unchecked) var lastReadIteration: UInt64 = 0
  @exclusivity(unchecked) var backToBackReads = 0
  /// The work of the frames decoded in the current read turn (``Frame/receiveWork``).
  @exclusivity(unchecked) var turnWork = 0
  /// The frame array of the last read turn, emptied, for the next (see `readTurn`).
  @exclusivity(unchecked) var spareFrames: [Frame] = []
  @exclusivity(unchecked) var turnScheduled = false
  /// What ``ReceiveBudget`` counts for this connection (set by the budget).
  @exclusivity(unchecked) var heldPartialBytes = 0

  init(
    id: ConnectionID, fd: Int32, remote: SocketAddress, loop: EventLoop, sink: @escaping TransportSink, maximumQueuedBytes: Int,
    limits: ReceiveLimits = ReceiveLimits(), security: ConnectionSecurity, role: ConnectionRole
  ) {
    self.limits = limits
    self.id = id
    self.fd = fd
    self.remote = remote
    self.loop = loop
    self.sink = sink
    self.maximumQueuedBytes = maximumQueuedBytes
    queue = SendQueue(limit: maximumQueuedBytes)
    switch role {
    case .initiator(let expected): channel = SecureChannel(security: security, role: .initiator(expecting: expected))
    case .responder: channel = SecureChannel(security: security, role: .responder)
    }
    var one: Int32 = 1
    _ = setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
  }

  /// Starts reading, and an initiator's handshake. Loop thread only.
  func activate() throws(SystemError) {
    watching = NEARBY_EPOLLIN | NEARBY_EPOLLRDHUP
    try loop.register(fd, events: watching, handler: self)
    writeRaw(channel.start())
  }

  // MARK: Sending (loop thread)

  /// Queues one encoded frame. Loop thread only.
  package func send(_ frame: Frame) -> QueueResult {
    enqueue { FrameEncoder.encode(frame, into: &$0) }
  }

  /// Queues bytes that are already encoded frames. Loop thread only.
  package func send(encoded bytes: [UInt8]) -> QueueResult {
    enqueue { $0.append(contentsOf: bytes) }
  }

  /// Queues a MESSAGE frame, encoding it straight into the send buffer. Loop thread only.
  package func send(message: Frame.Message) -> QueueResult {
    enqueue { FrameEncoder.encodeMessage(message, into: &$0) }
  }

  /// Queues a MESSAGE frame sent before and sent again (a resumed session): whatever the
  /// queue holds, since the resend window it comes from bounds what is sent again. Loop
  /// thread only.
  package func sendAgain(message: Frame.Message) -> QueueResult {
    enqueue(limit: .max) { FrameEncoder.encodeMessage(message, into: &$0) }
  }

  /// Appends bytes with `encode` unless the queue is over its limit. Loop thread only.
  /// - Parameter force: for small control frames (acknowledgements, heartbeats, goodbye):
  ///   queued up to twice the limit, so a queue full of messages cannot block them.
  package func enqueue(force: Bool = false, _ encode: (inout [UInt8]) -> Void) -> QueueResult {
    enqueue(limit: force ? 2 * maximumQueuedBytes : maximumQueuedBytes, encode)
  }

  private func enqueue(limit: Int, _ encode: (inout [UInt8]) -> Void) -> QueueResult {
    guard loop.inLoop else {
      // A job of its owner that runs after the loop stopped (``EventLoop/isCurrent``): nothing
      // will be written any more.
      precondition(loop.isCurrent, "a connection's frames are queued on its event loop")
      return .closed
    }
    switch queue.enqueue(limit: limit, encode) {
    case .queued(let scheduleFlush):
      // Everything queued during this loop iteration goes out in one write at its end.
      if scheduleFlush { loop.flushAfterIteration(self) }
      return .queued
    case .full: return .full
    case .closed: return .closed
    }
  }

  /// Bytes waiting to be written. Loop thread only.
  package var queuedBytes: Int {
    precondition(loop.isCurrent, "a connection's queue is read on its event loop")
    return queue.queuedBytes
  }

  /// Asks for a ``TransportEvent/writable(_:)`` once the queue has drained below half its
  /// limit. - Returns: `false` if it already has (nothing will be reported then). Loop
  /// thread only.
  package func notifyWhenWritable() -> Bool {
    precondition(loop.isCurrent, "a connection's queue is watched on its event loop")
    return queue.notifyWhenWritable()
  }

  /// Asks for a ``TransportEvent/writable(_:)`` once fewer than `threshold` bytes are queued
  /// (file transfers keep the queue short: NearbySession+FileSending.swift).
  /// - Returns: `false` if that is already so (nothing will be reported then). Loop thread
  ///   only.
  package func notifyWhenQueued(below threshold: Int) -> Bool {
    precondition(loop.isCurrent, "a connection's queue is watched on its event loop")
    return queue.notifyWhenQueued(below: threshold)
  }

  /// Closes the connection: `.now` drops what is queued; `.shutdownAndLinger` writes what is
  /// queued, shuts down the write side and discards what still arrives until the peer closes.
  /// On the loop thread, nothing more is queued from the call on, and the rest happens in a
  /// later job of the loop (after the next poll, maybe: what was queued before may still be
  /// written until then); from another thread, all of it happens in a job of the loop.
  package func close(_ mode: CloseAction) {
    guard loop.inLoop else {
      loop.execute { [self] in close(mode) }
      return
    }
    guard let step = queue.close(mode) else { return }
    // Not at once: the caller may be in the middle of this connection's read turn.
    loop.execute { [self] in
      switch step {
      case .closeNow: closeNow()
      case .flushAndLinger:
        discarding = true
        flush()
      }
    }
  }

  // MARK: Flow control (loop thread)

  /// Stops reading: TCP then pushes back on the peer once the kernel buffers fill. The
  /// owner calls it when the application falls behind. Loop thread only.
  package func pauseReading() {
    precondition(loop.isCurrent, "pauseReading must run on the event loop")
    guard isOpen, !readingPaused else { return }
    readingPaused = true
    updateInterest()
  }

  /// Reads again after ``pauseReading()``. Loop thread only.
  package func resumeReading() {
    precondition(loop.isCurrent, "resumeReading must run on the event loop")
    guard isOpen, readingPaused else { return }
    readingPaused = false
    updateInterest()
    readAvailable()
  }

  /// Whether reading is paused.
  package var isReadingPaused: Bool { readingPaused }
}

/// Which side of the handshake a connection is.
package enum ConnectionRole: Hashable, Sendable {
  /// We opened it; `expecting` is the peer we meant to reach (from discovery), if known.
  case initiator(expecting: PeerID?)
  /// We accepted it.
  case responder
}
