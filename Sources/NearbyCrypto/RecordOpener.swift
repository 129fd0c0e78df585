import CSodium
import NearbyCore

/// Opens the peer's record stream incrementally: bytes in, in chunks of any size, plaintext
/// out record by record, decrypted in place in the opener's own buffer.
///
/// It checks a record's length as soon as the four length bytes are there, before making
/// room for the record; after the first error it stays failed. The stream must end with a
/// CLOSE record: ``finish()`` at end of input reports a stream without one as truncated.
///
/// ```swift
/// opener.append(bytes)                       // or read(2) into withWritableBytes
/// while try opener.openNext({ frameDecoder.append($0) }) {}
/// if opener.isClosed { /* the peer finished */ }
/// ```
package final class RecordOpener {
  /// Where the opener is in the stream.
  package enum State: Hashable, Sendable {
    case waitingForHeader
    /// The header is in; waiting for the rest of a record of this `length`.
    case waitingForRecord(length: Int)
    /// The CLOSE record was opened: the peer sends nothing more.
    case closed
    case failed(RecordError)
  }

  /// The negotiated cipher.
  package let cipher: RecordCipher
  // The stored properties below are `@exclusivity(unchecked)`: only its connection's loop
  // thread uses them, and the runtime's check of every access to a class's property was about
  // a tenth of the instructions of a message's round trip (callgrind; see the README's
  // benchmarks).
  /// Where the opener is in the stream.
  @exclusivity(unchecked) package private(set) var state = State.waitingForHeader
  @exclusivity(unchecked) private var keys: RecordKeyState
  @exclusivity(unchecked) private var storage: UnsafeMutableRawPointer?
  @exclusivity(unchecked) private var capacity = 0
  @exclusivity(unchecked) private var readIndex = 0
  @exclusivity(unchecked) private var writeIndex = 0
  /// How far into the buffer bytes were ever written (what a wipe must cover): a buffer
  /// lent to `read(2)` is mostly never written, and wiping all of it for a short message
  /// cost more than opening the message.
  @exclusivity(unchecked) private var dirtyCount = 0

  /// - Parameters:
  ///   - key: the peer's direction key from the handshake.
  ///   - rekeyInterval: ``RekeyInterval/standard``; tests pass smaller ones.
  package init(cipher: RecordCipher, key: SecretBytes, rekeyInterval: RekeyInterval = .standard) {
    self.cipher = cipher
    keys = RecordKeyState(cipher: cipher, key: key, interval: rekeyInterval)
  }

  deinit { release() }

  /// Records opened so far (the sequence number of the next one).
  package var sequence: UInt64 { keys.sequence }
  /// How many times the key moved on.
  package var epoch: UInt64 { keys.epoch }
  /// Whether the peer's CLOSE record arrived.
  package var isClosed: Bool { state == .closed }
  /// Bytes received and not yet opened.
  package var bufferedByteCount: Int { writeIndex - readIndex }
  /// The memory the opener holds.
  package var allocatedByteCount: Int { capacity }

  /// Appends bytes received from the peer.
  package func append(_ bytes: some Collection<UInt8>) {
    let count = bytes.count
    guard count > 0 else { return }
    withWritableBytes(minimumCount: count) { buffer in
      UnsafeMutableRawBufferPointer(rebasing: buffer[0..<count]).copyBytes(from: bytes)
      return count
    }
  }

  /// Lends writable space at the end of the buffer (at least `minimumCount` bytes), for
  /// example to `read(2)` into.
  /// - Parameter body: writes into the space and returns how many bytes it wrote.
  @discardableResult
  package func withWritableBytes<E: Error>(minimumCount: Int, _ body: (UnsafeMutableRawBufferPointer) throws(E) -> Int) throws(E) -> Int {
    reserve(max(minimumCount, 1))
    let space = UnsafeMutableRawBufferPointer(start: storage! + writeIndex, count: capacity - writeIndex)
    let written = try body(space)
    precondition(written >= 0 && written <= space.count, "wrote outside the lent space")
    writeIndex += written
    dirtyCount = max(dirtyCount, writeIndex)
    return written
  }

  /// Opens the next complete data record and lends its plaintext to `body` (valid only
  /// inside it; a PADDED record's without the padding). A CLOSE record is consumed on the
  /// way and makes ``isClosed`` true.
  /// - Returns: `true` when a data record was opened; `false` when more bytes are needed or
  ///   the stream is closed.
  /// - Throws: ``RecordError``; the opener then stays failed.
  package func openNext(_ body: (UnsafeRawBufferPointer) -> Void) throws(RecordError) -> Bool {
    while true {
      switch state {
      case .failed(let error):
        throw error
      case .closed:
        if bufferedByteCount > 0 { throw fail(.dataAfterClose(byteCount: bufferedByteCount)) }
        return false
      case .waitingForHeader:
        guard bufferedByteCount >= 4 else { return false }
        let length = UInt32(bigEndian: storage!.loadUnaligned(fromByteOffset: readIndex, as: UInt32.self))
        if length > UInt32(SecureProtocol.maximumRecordLength) { throw fail(.recordTooLarge(length: length)) }
        guard bufferedByteCount >= 5 else { return false }
        try checkHeader(length: Int(length), type: storage!.load(fromByteOffset: readIndex + 4, as: UInt8.self))
        state = .waitingForRecord(length: Int(length))
      case .waitingForRecord(let length):
        guard bufferedByteCount >= 4 + length else { return false }
        let record = storage! + readIndex
        let type = record.load(fromByteOffset: 4, as: UInt8.self)
        if type == FrameType.error.rawValue { throw fail(peerError(UnsafeRawBufferPointer(start: record + 4, count: length))) }
        let plaintextCount = length - 1 - AEAD.tagCount
        let opened = keys.open(
          additionalData: UnsafeRawBufferPointer(start: record, count: 5), sealed: UnsafeRawBufferPointer(start: record + 5, count: length - 1),
          into: record + 5)
        guard opened else { throw fail(.decryptFailed(sequence: keys.sequence)) }
        readIndex += 4 + length
        keys.advance(plaintextCount: plaintextCount)
        if type == SecureFrameType.close.rawValue {
          state = .closed
          continue
        }
        var framesCount = plaintextCount
        if type == SecureFrameType.padded.rawValue {
          framesCount = try unpaddedCount(UnsafeRawBufferPointer(start: record + 5, count: plaintextCount))
        }
        state = .waitingForHeader
        body(UnsafeRawBufferPointer(start: record + 5, count: framesCount))
        return true
      }
    }
  }

  /// The plaintext of the next data record as an array, or `nil` when more bytes are
  /// needed or the stream is closed.
  package func next() throws(RecordError) -> [UInt8]? {
    var plaintext: [UInt8]?
    _ = try openNext { plaintext = Array($0) }
    return plaintext
  }

  /// Call at end of input, after ``openNext(_:)`` returned `false`.
  /// - Throws: ``RecordError/truncated(bufferedBytes:)`` unless the CLOSE record arrived, or
  ///   the error the opener already failed with.
  package func finish() throws(RecordError) {
    switch state {
    case .failed(let error): throw error
    case .closed: if bufferedByteCount > 0 { throw fail(.dataAfterClose(byteCount: bufferedByteCount)) }
    case .waitingForHeader, .waitingForRecord: throw fail(.truncated(bufferedBytes: bufferedByteCount))
    }
  }

  /// The number of frame bytes in a PADDED record's authentic `plaintext`: what comes before
  /// the zeros its last byte counts. (Authentic, yet a peer can still have sealed nonsense.)
  private func unpaddedCount(_ plaintext: UnsafeRawBufferPointer) throws(RecordError) -> Int {
    let zeros = Int(plaintext[plaintext.count - 1])
    guard zeros < plaintext.count else {
      throw fail(.malformedRecord("a PADDED record (record \(keys.sequence - 1)) counts \(zeros) zeros in \(plaintext.count) bytes"))
    }
    let framesCount = plaintext.count - 1 - zeros
    // Eight bytes at a time (`allSatisfy` went byte by byte: about 200 instructions a message).
    var index = framesCount
    var bits: UInt64 = 0
    while index + 8 <= plaintext.count - 1 {
      bits |= plaintext.loadUnaligned(fromByteOffset: index, as: UInt64.self)
      index += 8
    }
    while index < plaintext.count - 1 {
      bits |= UInt64(plaintext[index])
      index += 1
    }
    guard bits == 0 else {
      throw fail(.malformedRecord("a PADDED record's padding (record \(keys.sequence - 1)) is not all zeros"))
    }
    return framesCount
  }

  /// Checks what the five header bytes allow before the record's bytes are awaited.
  private func checkHeader(length: Int, type: UInt8) throws(RecordError) {
    // A length of 0 has no type byte: the byte after it belongs to whatever follows.
    guard length >= 1 else { throw fail(.malformedRecord("a frame of length 0")) }
    switch type {
    case SecureFrameType.record.rawValue:
      guard length >= 1 + AEAD.tagCount else { throw fail(.malformedRecord("a RECORD of length \(length) is shorter than its tag")) }
    case SecureFrameType.close.rawValue:
      guard length == 1 + AEAD.tagCount else { throw fail(.malformedRecord("a CLOSE record of length \(length) is not empty")) }
    case SecureFrameType.padded.rawValue:
      guard length >= 2 + AEAD.tagCount else {
        throw fail(.malformedRecord("a PADDED record of length \(length) has no room for its padding's count"))
      }
    case FrameType.error.rawValue where keys.sequence == 0 && length <= SecureProtocol.maximumHandshakeFrameLength:
      break  // The initiator rejected message 4 in plaintext: decoded in peerError.
    default:
      throw fail(.malformedRecord("type 0x\(String(type, radix: 16)) (record \(keys.sequence)) is not RECORD (0x11), CLOSE (0x12) or PADDED (0x13)"))
    }
  }

  /// A plaintext ERROR frame (`length` bytes from its type byte on) sent instead of a first record.
  private func peerError(_ frame: UnsafeRawBufferPointer) -> RecordError {
    guard case .success(.error(let code, let message)) = Result(catching: { () throws(FrameDecodingError) in try FrameDecoder.decodeBody(frame) })
    else { return .malformedRecord("a malformed plaintext ERROR frame instead of the first record") }
    return .peerAborted(code: code, message: message)
  }

  private func fail(_ error: RecordError) -> RecordError {
    state = .failed(error)
    return error
  }

  /// Gives the buffer back when nothing is buffered, so that an idle connection stays small.
  /// The owner calls it when traffic is light (after a short read): a stream of large records
  /// would otherwise allocate, and fault in, a new buffer per read.
  package func shrinkIfEmpty() {
    guard bufferedByteCount == 0, storage != nil else { return }
    release()
    capacity = 0
    readIndex = 0
    writeIndex = 0
  }

  /// Makes room for `count` more bytes, compacting or growing the buffer.
  private func reserve(_ count: Int) {
    if capacity - writeIndex >= count { return }
    let live = writeIndex - readIndex
    var needed = live + count
    if case .waitingForRecord(let length) = state { needed = max(needed, 4 + length) }
    if needed <= capacity, readIndex > 0 {
      if live > 0 { storage!.copyMemory(from: storage! + readIndex, byteCount: live) }
      readIndex = 0
      writeIndex = live
      return
    }
    var newCapacity = max(capacity, 4096)
    while newCapacity < needed { newCapacity *= 2 }
    let newStorage = UnsafeMutableRawPointer.allocate(byteCount: newCapacity, alignment: 16)
    if live > 0 { newStorage.copyMemory(from: storage! + readIndex, byteCount: live) }
    release()
    dirtyCount = live
    storage = newStorage
    capacity = newCapacity
    readIndex = 0
    writeIndex = live
  }

  /// Wipes what was written (decrypted plaintext stays in the buffer) and frees the buffer.
  private func release() {
    guard let storage else { return }
    sodium_memzero(storage, dirtyCount)
    storage.deallocate()
    self.storage = nil
    dirtyCount = 0
  }
}
