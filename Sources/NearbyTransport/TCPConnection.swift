import CNearbySystem
import NearbyCore
import NearbySystem
import Synchronization

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
  /// Frames received, in order.
  case frames(ConnectionID, [Frame])
  /// The peer's bytes are not valid frames (frames before the error were delivered).
  case decodingFailed(ConnectionID, FrameDecodingError)
  /// EOF or a socket error.
  case closed(ConnectionID, String)
  /// The send queue drained below its low-water mark after having been full.
  case writable(ConnectionID)
}

/// Receives transport events; called from the event loop thread.
package typealias TransportSink = @Sendable (TransportEvent) -> Void

/// A non-blocking TCP connection driven by an ``EventLoop``.
///
/// Any thread may queue frames; the loop thread writes them, many frames per `send(2)`, and
/// reads and decodes what arrives. The send queue is bounded: a frame that does not fit is
/// refused, so a peer that stops reading costs bounded memory.
package final class TCPConnection: EventLoopHandler, @unchecked Sendable {
  /// The outcome of queueing a frame.
  package enum QueueResult: Sendable, Equatable {
    case queued
    /// The queue holds more than its limit: the peer reads too slowly.
    case full
    /// The connection is closing or closed.
    case closed
  }

  private struct Outbound {
    var buffer: [UInt8] = []
    /// Bytes queued and not yet written (buffer plus what the loop is writing).
    var queuedBytes = 0
    var flushScheduled = false
    var closing = false
    var shutdownAfterFlush = false
    var closed = false
    var wasFull = false
  }

  package let id: ConnectionID
  package let remote: SocketAddress
  package let loop: EventLoop
  /// The most bytes the send queue holds before refusing frames.
  package let maximumQueuedBytes: Int
  private let fd: Int32
  private let sink: TransportSink
  private let outbound = Mutex(Outbound())

  // Loop thread only.
  private let decoder = FrameDecoder()
  private var writing: [UInt8] = []
  private var writeOffset = 0
  private var watching: UInt32 = 0
  private var readingPaused = false
  private var discarding = false
  private var isOpen = true
  private var lastReadSize = 0

  init(id: ConnectionID, fd: Int32, remote: SocketAddress, loop: EventLoop, sink: @escaping TransportSink, maximumQueuedBytes: Int) {
    self.id = id
    self.fd = fd
    self.remote = remote
    self.loop = loop
    self.sink = sink
    self.maximumQueuedBytes = maximumQueuedBytes
    var one: Int32 = 1
    _ = setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
  }

  /// Starts reading. Loop thread only.
  func activate() throws(SystemError) {
    watching = NEARBY_EPOLLIN | NEARBY_EPOLLRDHUP
    try loop.register(fd, events: watching, handler: self)
  }

  // MARK: Sending (any thread)

  /// Queues one encoded frame.
  package func send(_ frame: Frame) -> QueueResult {
    enqueue { FrameEncoder.encode(frame, into: &$0) }
  }

  /// Queues bytes that are already encoded frames.
  package func send(encoded bytes: [UInt8]) -> QueueResult {
    enqueue { $0.append(contentsOf: bytes) }
  }

  /// Queues a MESSAGE frame, encoding it straight into the send buffer.
  package func send(message: Frame.Message) -> QueueResult {
    enqueue { FrameEncoder.encodeMessage(message, into: &$0) }
  }

  /// Appends bytes with `encode` unless the queue is over its limit.
  /// - Parameter force: for small control frames (acknowledgements, heartbeats, goodbye):
  ///   queued up to twice the limit, so a queue full of messages cannot block them.
  package func enqueue(force: Bool = false, _ encode: (inout [UInt8]) -> Void) -> QueueResult {
    var wake = false
    let limit = force ? 2 * maximumQueuedBytes : maximumQueuedBytes
    let onLoop = loop.inLoop
    let result = outbound.withLock { state -> QueueResult in
      if state.closing || state.closed { return .closed }
      if state.queuedBytes >= limit {
        state.wasFull = true
        return .full
      }
      let before = state.buffer.count
      encode(&state.buffer)
      state.queuedBytes += state.buffer.count - before
      if !state.flushScheduled {
        state.flushScheduled = true
        wake = true
      }
      return .queued
    }
    if wake {
      if onLoop {
        // Everything queued during this loop iteration goes out in one write at its end.
        loop.afterIteration { [self] in flush() }
      } else {
        loop.execute { [self] in flush() }
      }
    }
    return result
  }

  /// Bytes waiting to be written.
  package var queuedBytes: Int { outbound.withLock { $0.queuedBytes } }

  /// Asks for a ``TransportEvent/writable(_:)`` once the queue has drained below half its
  /// limit. - Returns: `false` if it already has (nothing will be reported then).
  package func notifyWhenWritable() -> Bool {
    outbound.withLock { state in
      if state.closed || state.closing { return false }
      if state.queuedBytes < maximumQueuedBytes / 2 { return false }
      state.wasFull = true
      return true
    }
  }

  /// Closes the connection: `.now` drops what is queued; `.shutdownAndLinger` writes what is
  /// queued, shuts down the write side and discards what still arrives until the peer closes.
  package func close(_ mode: CloseAction) {
    let proceed = outbound.withLock { state -> Bool in
      if state.closed { return false }
      switch mode {
      case .now: state.closed = true
      case .shutdownAndLinger:
        if state.closing { return false }
        state.closing = true
        state.shutdownAfterFlush = true
      }
      return true
    }
    guard proceed else { return }
    loop.execute { [self] in
      switch mode {
      case .now: closeNow()
      case .shutdownAndLinger:
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

  // MARK: Loop thread

  package func handle(events: UInt32) {
    if events & NEARBY_EPOLLOUT != 0 { flush() }
    if events & (NEARBY_EPOLLIN | NEARBY_EPOLLRDHUP | NEARBY_EPOLLHUP | NEARBY_EPOLLERR) != 0, isOpen, !readingPaused {
      readAvailable()
    }
  }

  private func flush() {
    guard isOpen else { return }
    while true {
      if writeOffset == writing.count {
        // Take what other threads queued, leaving them our empty buffer (and its capacity).
        writing.removeAll(keepingCapacity: writing.capacity <= 1 << 20)
        writeOffset = 0
        let (more, shutdown) = outbound.withLock { state -> (Bool, Bool) in
          if state.buffer.isEmpty {
            state.flushScheduled = false
            return (false, state.shutdownAfterFlush)
          }
          swap(&state.buffer, &writing)
          return (true, false)
        }
        if !more {
          if watching & NEARBY_EPOLLOUT != 0 {
            watching &= ~NEARBY_EPOLLOUT
            updateInterest()
          }
          if writing.capacity > 65_536 { writing = [] }
          if shutdown {
            outbound.withLock { $0.shutdownAfterFlush = false }
            _ = Glibc.shutdown(fd, Int32(SHUT_WR))
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

  private func readAvailable() {
    var batch: [Frame] = []
    var budget = 8
    reading: while budget > 0, isOpen, !readingPaused {
      budget -= 1
      var result: Result<IOResult<Int>, SystemError> = .success(.wouldBlock)
      var requested = 0
      decoder.withWritableBytes(minimumCount: 16_384) { space -> Int in
        requested = space.count
        result = Result { () throws(SystemError) in
          try systemCall("read") { Glibc.read(fd, space.baseAddress, space.count) }
        }
        if case .success(.done(let count)) = result { return count }
        return 0
      }
      switch result {
      case .success(.done(0)):
        deliver(&batch)
        endOfStream()
        return
      case .success(.done(let count)):
        lastReadSize = count
        if discarding {
          decoder.reset()
          continue
        }
        do {
          while let frame = try decoder.next() { batch.append(frame) }
        } catch {
          deliver(&batch)
          discarding = true
          decoder.reset()
          sink(.decodingFailed(id, error))
          return
        }
        // A short read emptied the socket: the fd is level-triggered, so epoll reports what
        // arrives next, and a second `read` that would only say EAGAIN is saved.
        if count < requested {
          // Light traffic: a large read buffer is not worth keeping.
          if count < 4096 { decoder.shrinkIfEmpty() }
          break reading
        }
      case .success(.wouldBlock):
        deliver(&batch)
        return
      case .failure(let error):
        deliver(&batch)
        fail("\(error)")
        return
      }
    }
    deliver(&batch)
  }

  private func deliver(_ batch: inout [Frame]) {
    guard !batch.isEmpty else { return }
    let frames = batch
    batch = []
    sink(.frames(id, frames))
  }

  private func endOfStream() {
    var detail = "the peer closed the connection"
    if !discarding {
      do {
        try decoder.finish()
      } catch {
        detail = "\(error)"
      }
    }
    closeNow()
    sink(.closed(id, detail))
  }

  private func fail(_ detail: String) {
    closeNow()
    sink(.closed(id, detail))
  }

  private func updateInterest() {
    guard isOpen else { return }
    var events = watching
    if readingPaused { events &= ~(NEARBY_EPOLLIN | NEARBY_EPOLLRDHUP) }
    loop.reregister(fd, events: events)
  }

  private func closeNow() {
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
  }
}
