import CNearbySystem
import NearbyCore
import NearbyCrypto
import NearbySystem

#if canImport(Glibc)
  import Glibc
#endif

/// The loop thread's side of a connection: where its events go, and writing (handshake
/// bytes, then sealed records). Reading and closing are in TCPConnection+Reading.swift.
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
    queue.queuedUnsealed(bytes.count)
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
        let notify = queue.wrote(written)
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

  /// Moves what is queued into ``writing``, as ``SendQueue`` says: sealed into records (as
  /// much as is queued in one go, up to 64 KiB per record) once the handshake is done, then
  /// the CLOSE record and the shutdown of the write side when the connection is closing.
  /// - Returns: whether there is something to write.
  ///
  /// Nothing queued is ever written in plaintext: before the handshake completes, frames
  /// wait for it (it flushes when it does), and so does a shutdown, unless the handshake
  /// failed. (The one plaintext frame of that phase, ERROR, goes through
  /// ``sendPlaintextError(_:)``.)
  private func takeQueued() -> Bool {
    let sealer = channel.sealer
    switch queue.nextBatch(canSeal: sealer != nil, handshakeFailed: channel.failed, swappingWith: &sealing) {
    case .seal:
      let before = writing.count
      sealing.withUnsafeBytes { sealer!.seal($0, into: &writing) }
      queue.sealed(plaintextCount: sealing.count, sealedCount: writing.count - before)
      sealing.removeAll(keepingCapacity: sealing.capacity <= bufferCapacityLimit)
      return true
    case .closeRecord:
      let before = writing.count
      sealer!.close(into: &writing)
      queue.sealed(plaintextCount: 0, sealedCount: writing.count - before)
      return true
    case .shutDown:
      _ = Glibc.shutdown(fd, Int32(SHUT_WR))
      return false
    case .idle:
      return false
    }
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
}
