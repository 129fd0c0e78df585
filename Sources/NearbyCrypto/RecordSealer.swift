/// Seals plaintext (encoded frames) into the records of one direction, written straight
/// into the caller's output buffer: the plaintext is read once and encrypted into place.
///
/// A record is `u32 length | u8 type | ciphertext | tag(16)`, with `length = 1 + n + 16`
/// for `n` ≤ 64 KiB plaintext bytes, the five header bytes as additional data and the
/// nonce from the record's sequence number. Longer plaintext is split into several records;
/// frames may span records. With ``padsShortRecords``, a record of a few frame bytes goes out
/// PADDED instead (type 0x13): its plaintext, frames then zeros then their count, is a
/// multiple of 128 bytes.
///
/// A class, not a struct: two copies of a sealer would reuse nonces.
package final class RecordSealer {
  /// The negotiated cipher.
  package let cipher: RecordCipher
  // The stored properties below are `@exclusivity(unchecked)`: only its connection's loop
  // thread uses them, and the runtime's check of every access to a class's property was about
  // a tenth of the instructions of a message's round trip (callgrind; see the README's
  // benchmarks).
  @exclusivity(unchecked) private var keys: RecordKeyState
  /// Set by ``close(into:)``: nothing may be sealed after the CLOSE record.
  @exclusivity(unchecked) package private(set) var isClosed = false
  /// Whether records whose frames take fewer than ``paddingLimit`` bytes go out PADDED, their
  /// plaintext rounded up to a multiple of ``paddingStep`` (only to a peer that announced it
  /// reads them: ``HandshakeResult/makeSealer(rekeyInterval:)`` decides).
  package let padsShortRecords: Bool

  /// PADDED records' plaintext is a multiple of this many bytes ...
  package static let paddingStep = 128
  /// ... and at most this many: longer records go out as they are.
  package static let paddingLimit = 1024

  /// - Parameters:
  ///   - key: the direction's key from the handshake.
  ///   - rekeyInterval: ``RekeyInterval/standard``; tests pass smaller ones.
  ///   - padsShortRecords: see ``padsShortRecords``.
  package init(cipher: RecordCipher, key: SecretBytes, rekeyInterval: RekeyInterval = .standard, padsShortRecords: Bool = false) {
    self.cipher = cipher
    self.padsShortRecords = padsShortRecords
    keys = RecordKeyState(cipher: cipher, key: key, interval: rekeyInterval)
  }

  /// Records sealed so far (the sequence number of the next one).
  package var sequence: UInt64 { keys.sequence }
  /// How many times the key moved on.
  package var epoch: UInt64 { keys.epoch }

  /// The number of bytes a sealer without padding writes for `plaintextCount` bytes: 21 bytes
  /// of overhead per started 64 KiB, nothing for 0.
  package static func sealedCount(plaintextCount: Int) -> Int {
    let records = (plaintextCount + SecureProtocol.maximumRecordPlaintext - 1) / SecureProtocol.maximumRecordPlaintext
    return plaintextCount + records * (5 + AEAD.tagCount)
  }

  /// The number of bytes ``seal(_:into:)-(UnsafeRawBufferPointer,UnsafeMutableRawBufferPointer)``
  /// writes for `plaintextCount` bytes: ``sealedCount(plaintextCount:)``, plus the padding
  /// of the last record when it goes out PADDED.
  package func sealedCount(of plaintextCount: Int) -> Int {
    let plain = Self.sealedCount(plaintextCount: plaintextCount)
    guard plaintextCount > 0 else { return plain }
    let last = (plaintextCount - 1) % SecureProtocol.maximumRecordPlaintext + 1
    return plain + (paddedCount(last).map { $0 - last } ?? 0)
  }

  /// The plaintext size of a PADDED record carrying `count` bytes of frames (at least one
  /// byte more: the padding's count), or `nil` when they go out in a RECORD.
  private func paddedCount(_ count: Int) -> Int? {
    guard padsShortRecords, count < Self.paddingLimit else { return nil }
    return (count + Self.paddingStep) / Self.paddingStep * Self.paddingStep
  }

  /// Seals `plaintext` into `output`, which must have room for ``sealedCount(of:)`` bytes.
  /// - Returns: the number of bytes written.
  @discardableResult
  package func seal(_ plaintext: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer) -> Int {
    precondition(!isClosed, "seal after close")
    precondition(output.count >= sealedCount(of: plaintext.count), "the output buffer is too small")
    var read = 0
    var written = 0
    while read < plaintext.count {
      let count = min(SecureProtocol.maximumRecordPlaintext, plaintext.count - read)
      let part = UnsafeRawBufferPointer(rebasing: plaintext[read..<read + count])
      let space = UnsafeMutableRawBufferPointer(rebasing: output[written...])
      if let padded = paddedCount(count) {
        written += sealPadded(part, count: padded, into: space)
      } else {
        written += sealRecord(type: .record, part, into: space)
      }
      read += count
    }
    return written
  }

  /// Appends the records sealing `plaintext` to `output`.
  package func seal(_ plaintext: UnsafeRawBufferPointer, into output: inout [UInt8]) {
    let start = output.count
    let count = sealedCount(of: plaintext.count)
    guard count > 0 else { return }
    Self.appendZeros(count, to: &output)
    output.withUnsafeMutableBytes { buffer in
      _ = seal(plaintext, into: UnsafeMutableRawBufferPointer(rebasing: buffer[start..<start + count]))
    }
  }

  /// Appends the records sealing `plaintext` to `output`.
  package func seal(_ plaintext: [UInt8], into output: inout [UInt8]) {
    plaintext.withUnsafeBytes { seal($0, into: &output) }
  }

  /// Room for `count` bytes at the end of `output`, copied from a zero page: an unoptimized
  /// (debug) build appended `repeatElement(0, count:)` one element at a time, which was 90% of
  /// the CPU time of a file transfer in the tests. Release builds do the same either way.
  private static func appendZeros(_ count: Int, to output: inout [UInt8]) {
    var left = count
    while left > 0 {
      let step = min(left, zeros.count)
      zeros.withUnsafeBufferPointer { output.append(contentsOf: UnsafeBufferPointer(rebasing: $0[0..<step])) }
      left -= step
    }
  }

  private static let zeros = [UInt8](repeating: 0, count: 1 << 16)

  /// Appends the CLOSE record: the last one of this direction. It tells the peer the
  /// stream ends here, so that a cut stream can be told from a finished one.
  package func close(into output: inout [UInt8]) {
    precondition(!isClosed, "close twice")
    let start = output.count
    Self.appendZeros(5 + AEAD.tagCount, to: &output)
    output.withUnsafeMutableBytes { buffer in
      _ = sealRecord(type: .close, UnsafeRawBufferPointer(start: nil, count: 0), into: UnsafeMutableRawBufferPointer(rebasing: buffer[start...]))
    }
    isClosed = true
  }

  /// Seals `frames` into a PADDED record of `count` plaintext bytes: the frames, zeros, and
  /// the number of zeros (one byte), encrypted in place. Returns the record's size.
  private func sealPadded(_ frames: UnsafeRawBufferPointer, count: Int, into output: UnsafeMutableRawBufferPointer) -> Int {
    let zeros = count - frames.count - 1
    precondition(zeros >= 0 && zeros <= Int(UInt8.max) && output.count >= 5 + count + AEAD.tagCount, "a PADDED record of \(count) bytes")
    let body = UnsafeMutableRawBufferPointer(rebasing: output[5..<5 + count])
    if frames.count > 0 { body.baseAddress!.copyMemory(from: frames.baseAddress!, byteCount: frames.count) }
    (body.baseAddress! + frames.count).initializeMemory(as: UInt8.self, repeating: 0, count: zeros)
    body[count - 1] = UInt8(zeros)
    return sealRecord(type: .padded, UnsafeRawBufferPointer(body), into: output)
  }

  /// Seals one record of at most 64 KiB; returns its size. `plaintext` may be where the
  /// ciphertext goes (`output` from its sixth byte on): libsodium encrypts in place.
  private func sealRecord(type: SecureFrameType, _ plaintext: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer) -> Int {
    precondition(keys.canAdvance, "2^64 records were sealed with one session's keys")
    let length = 1 + plaintext.count + AEAD.tagCount
    let header = output.baseAddress!
    header.storeBytes(of: UInt32(length).bigEndian, toByteOffset: 0, as: UInt32.self)
    header.storeBytes(of: type.rawValue, toByteOffset: 4, as: UInt8.self)
    keys.seal(additionalData: UnsafeRawBufferPointer(start: header, count: 5), plaintext: plaintext, into: header + 5)
    keys.advance(plaintextCount: plaintext.count)
    return 4 + length
  }
}
