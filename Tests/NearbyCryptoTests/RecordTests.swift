import NearbyCore
import Testing

@testable import NearbyCrypto

/// A sealer/opener pair over one key, and helpers to open whole streams.
struct RecordPair {
  let key = SecretBytes((0..<32).map { UInt8(0xA0 + $0) })
  let cipher: RecordCipher
  var interval = RekeyInterval.standard

  func sealer() -> RecordSealer { RecordSealer(cipher: cipher, key: key, rekeyInterval: interval) }
  func opener() -> RecordOpener { RecordOpener(cipher: cipher, key: key, rekeyInterval: interval) }

  /// Each plaintext sealed in turn, then CLOSE; also the byte ranges of each record (an
  /// empty plaintext writes none).
  func stream(_ plaintexts: [[UInt8]], close: Bool = true) -> (bytes: [UInt8], records: [Range<Int>]) {
    let sealer = sealer()
    var bytes: [UInt8] = []
    var records: [Range<Int>] = []
    for plaintext in plaintexts {
      let start = bytes.count
      sealer.seal(plaintext, into: &bytes)
      if bytes.count > start { records.append(start..<bytes.count) }
    }
    if close {
      let start = bytes.count
      sealer.close(into: &bytes)
      records.append(start..<bytes.count)
    }
    return (bytes, records)
  }
}

/// Feeds chunks to an opener and collects everything it gives.
func openAll(_ opener: RecordOpener, _ chunks: [ArraySlice<UInt8>], finish: Bool = true) -> (plaintext: [UInt8], records: Int, error: RecordError?) {
  var plaintext: [UInt8] = []
  var records = 0
  do {
    for chunk in chunks {
      opener.append(chunk)
      while try opener.openNext({ plaintext += $0 }) { records += 1 }
    }
    if finish { try opener.finish() }
    return (plaintext, records, nil)
  } catch {
    return (plaintext, records, error)
  }
}

@Suite("Records: sealing, opening, splits and limits")
struct RecordTests {
  static let ciphers = Fixture.availableCiphers
  static let small: [[UInt8]] = [Array("hello".utf8), [], Array(repeating: 7, count: 100), Array("bye".utf8)]

  @Test("a stream opens identically whole, split at every byte, and byte by byte", arguments: ciphers)
  func splits(cipher: RecordCipher) {
    let pair = RecordPair(cipher: cipher)
    let (bytes, _) = pair.stream(Self.small)
    let expected = Self.small.flatMap { $0 }
    let whole = openAll(pair.opener(), [bytes[...]])
    #expect(whole.error == nil)
    #expect(whole.plaintext == expected)
    #expect(whole.records == 3, "an empty seal writes no record")
    for index in 0...bytes.count {
      let result = openAll(pair.opener(), split(bytes, at: index))
      #expect(result.error == nil, "split at \(index)")
      #expect(result.plaintext == expected, "split at \(index)")
    }
    #expect(openAll(pair.opener(), byteByByte(bytes)).plaintext == expected)
  }

  @Test("plaintext over 64 KiB is split into full records; the largest record opens", arguments: ciphers)
  func largePlaintext(cipher: RecordCipher) {
    let pair = RecordPair(cipher: cipher)
    let big = (0..<(3 * 65_536 + 10)).map { UInt8(truncatingIfNeeded: $0 &* 31) }
    let (bytes, _) = pair.stream([big])
    #expect(bytes.count == RecordSealer.sealedCount(plaintextCount: big.count) + 21)
    #expect(RecordSealer.sealedCount(plaintextCount: big.count) == big.count + 4 * 21)
    let result = openAll(pair.opener(), stride(from: 0, to: bytes.count, by: 4093).map { bytes[$0..<min($0 + 4093, bytes.count)] })
    #expect(result.error == nil)
    #expect(result.plaintext == big)
    #expect(result.records == 4)
  }

  @Test("the raw-buffer and array sealing write the same bytes", arguments: ciphers)
  func rawSealing(cipher: RecordCipher) {
    let pair = RecordPair(cipher: cipher)
    let plaintext = Array(repeating: UInt8(3), count: 70_000)
    var viaArray: [UInt8] = [0xEE]
    pair.sealer().seal(plaintext, into: &viaArray)
    var viaRaw = [UInt8](repeating: 0, count: RecordSealer.sealedCount(plaintextCount: plaintext.count))
    let written = plaintext.withUnsafeBytes { source in viaRaw.withUnsafeMutableBytes { pair.sealer().seal(source, into: $0) } }
    #expect(written == viaRaw.count)
    #expect(Array(viaArray.dropFirst()) == viaRaw)
  }

  @Test("AES-256-GCM with the key schedule expanded once seals and opens as with the key")
  func expandedKeyMatchesTheKey() throws {
    try #require(Sodium.aes256GCMAvailable)
    let key = SecretBytes((0..<32).map { UInt8($0 &* 7) })
    let other = SecretBytes((0..<32).map { UInt8($0 &* 7 &+ 1) })
    let expanded = AEAD.expandAES256GCMKey(key)
    let nonce = [UInt8](repeating: 0, count: 4) + (0..<8).map { UInt8($0) }
    let ad: [UInt8] = [1, 2, 3, 4, 5]
    for count in [0, 1, 15, 16, 17, 64, 1000] {
      let plaintext = (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31) }
      let plain = seal(plaintext, key, nil, nonce, ad)
      #expect(seal(plaintext, key, expanded, nonce, ad) == plain)
      #expect(open(plain, key, expanded, nonce, ad) == plaintext)
      #expect(open(plain, key, nil, nonce, ad) == plaintext)
      // The schedule of another key does not open it, whatever key is passed beside it.
      #expect(open(plain, key, AEAD.expandAES256GCMKey(other), nonce, ad) == nil)
    }
    func seal(_ plaintext: [UInt8], _ key: SecretBytes, _ expanded: SecretBytes?, _ nonce: [UInt8], _ ad: [UInt8]) -> [UInt8] {
      var output = [UInt8](repeating: 0, count: plaintext.count + AEAD.tagCount)
      nonce.withUnsafeBytes { nonce in
        ad.withUnsafeBytes { ad in
          plaintext.withUnsafeBytes { message in
            output.withUnsafeMutableBytes {
              AEAD.seal(.aes256GCM, key: key, expandedKey: expanded, nonce: nonce, additionalData: ad, plaintext: message, into: $0.baseAddress!)
            }
          }
        }
      }
      return output
    }
    func open(_ sealed: [UInt8], _ key: SecretBytes, _ expanded: SecretBytes?, _ nonce: [UInt8], _ ad: [UInt8]) -> [UInt8]? {
      var output = [UInt8](repeating: 0, count: max(sealed.count - AEAD.tagCount, 1))
      let ok = nonce.withUnsafeBytes { nonce in
        ad.withUnsafeBytes { ad in
          sealed.withUnsafeBytes { input in
            output.withUnsafeMutableBytes {
              AEAD.open(.aes256GCM, key: key, expandedKey: expanded, nonce: nonce, additionalData: ad, sealed: input, into: $0.baseAddress!)
            }
          }
        }
      }
      return ok ? Array(output.prefix(sealed.count - AEAD.tagCount)) : nil
    }
  }

  @Test("a tampered byte anywhere is detected, and nothing after it is released", arguments: ciphers)
  func tamperEveryByte(cipher: RecordCipher) {
    let pair = RecordPair(cipher: cipher)
    let (bytes, records) = pair.stream(Self.small)
    for index in bytes.indices {
      var altered = bytes
      altered[index] ^= 0x01
      let result = openAll(pair.opener(), [altered[...]])
      guard let error = result.error else {
        Issue.record("byte \(index): no error")
        continue
      }
      // Only the records wholly before the altered byte may have been opened.
      let intact = records.prefix { $0.upperBound <= index }.count
      let released = Self.small.filter { !$0.isEmpty }.prefix(intact).flatMap { $0 }
      #expect(Array(result.plaintext.prefix(released.count)) == Array(released.prefix(result.plaintext.count)), "byte \(index)")
      #expect(result.plaintext.count <= released.count, "byte \(index): released plaintext after the altered byte")
      let inHeaderLength = records.contains { $0.lowerBound <= index && index < $0.lowerBound + 4 }
      if !inHeaderLength {
        let typeByte = records.contains { $0.lowerBound + 4 == index }
        #expect(
          typeByte ? isMalformed(error) : error == .decryptFailed(sequence: UInt64(records.firstIndex { $0.contains(index) }!)),
          "byte \(index): \(error)")
      }
    }
  }

  @Test("replayed, reordered and dropped records fail to decrypt at their position", arguments: ciphers)
  func replayReorderDrop(cipher: RecordCipher) {
    let pair = RecordPair(cipher: cipher)
    let (bytes, r) = pair.stream([[1], [2], [3]], close: false)
    let record = { (index: Int) in Array(bytes[r[index]]) }
    let replay = record(0) + record(1) + record(1) + record(2)
    #expect(openAll(pair.opener(), [replay[...]]).error == .decryptFailed(sequence: 2))
    let reorder = record(1) + record(0) + record(2)
    #expect(openAll(pair.opener(), [reorder[...]]).error == .decryptFailed(sequence: 0))
    let drop = record(0) + record(2)
    let dropped = openAll(pair.opener(), [drop[...]])
    #expect(dropped.error == .decryptFailed(sequence: 1))
    #expect(dropped.plaintext == [1])
  }

  @Test("a stream without CLOSE is truncated; a cut record too; bytes after CLOSE are refused", arguments: ciphers)
  func truncation(cipher: RecordCipher) {
    let pair = RecordPair(cipher: cipher)
    let (closed, records) = pair.stream(Self.small)
    let opener = pair.opener()
    #expect(openAll(opener, [closed[...]]).error == nil)
    #expect(opener.isClosed)
    let (open, _) = pair.stream(Self.small, close: false)
    let cut = openAll(pair.opener(), [open[...]])
    #expect(cut.error == .truncated(bufferedBytes: 0))
    #expect(cut.plaintext == Self.small.flatMap { $0 }, "everything before the cut is still delivered")
    let midRecord = Array(closed[..<(records[1].lowerBound + 7)])
    #expect(openAll(pair.opener(), [midRecord[...]]).error == .truncated(bufferedBytes: 7))
    let extra = closed + [0, 0, 0, 1]
    #expect(openAll(pair.opener(), [extra[...]]).error == .dataAfterClose(byteCount: 4))
    // A CLOSE cut off from the stream's end is a truncation, even at a record boundary.
    let noClose = Array(closed[..<records.last!.lowerBound])
    #expect(openAll(pair.opener(), [noClose[...]]).error == .truncated(bufferedBytes: 0))
  }

  @Test("keys move on after the record interval, identically on both sides", arguments: ciphers)
  func rekeyByRecords(cipher: RecordCipher) {
    var pair = RecordPair(cipher: cipher)
    pair.interval = RekeyInterval(records: 3, bytes: 1 << 30)
    let sealer = pair.sealer()
    var bytes: [UInt8] = []
    for index in 0..<10 { sealer.seal([UInt8(index)], into: &bytes) }
    #expect(sealer.epoch == 3)
    #expect(sealer.sequence == 10)
    let opener = pair.opener()
    let result = openAll(opener, byteByByte(bytes), finish: false)
    #expect(result.error == nil)
    #expect(result.plaintext == Array(0..<10))
    #expect(opener.epoch == 3)
    // An opener that does not rekey fails at the first record of the second key.
    let standard = RecordOpener(cipher: cipher, key: pair.key)
    let wrong = openAll(standard, [bytes[...]], finish: false)
    #expect(wrong.error == .decryptFailed(sequence: 3))
    #expect(wrong.plaintext == [0, 1, 2])
  }

  @Test("keys move on once the byte interval is reached", arguments: ciphers)
  func rekeyByBytes(cipher: RecordCipher) {
    var pair = RecordPair(cipher: cipher)
    pair.interval = RekeyInterval(records: 1 << 20, bytes: 100)
    let sealer = pair.sealer()
    var bytes: [UInt8] = []
    for size in [40, 40, 19, 1, 100, 5] { sealer.seal([UInt8](repeating: UInt8(size), count: size), into: &bytes) }
    // 40+40+19 = 99 < 100; +1 reaches 100 (key 1); 100 (key 2); 5.
    #expect(sealer.epoch == 2)
    let result = openAll(pair.opener(), [bytes[...]], finish: false)
    #expect(result.error == nil)
    #expect(result.records == 6)
    #expect(RekeyInterval.standard == RekeyInterval(records: 1 << 20, bytes: 1 << 30))
  }

  @Test("an oversize length is refused from the four length bytes, before allocating")
  func oversize() {
    let pair = RecordPair(cipher: .chacha20Poly1305)
    for length in [UInt32(SecureProtocol.maximumRecordLength + 1), UInt32.max] {
      let opener = pair.opener()
      var header: [UInt8] = []
      header.append(bigEndian: length)
      let result = openAll(opener, [header[...]], finish: false)
      #expect(result.error == .recordTooLarge(length: length))
      #expect(opener.allocatedByteCount <= 4096)
      #expect(result.error?.errorCode == .frameTooLarge)
    }
    // The maximum itself is accepted (and a full record of it opens: see largePlaintext).
    var header: [UInt8] = []
    header.append(bigEndian: UInt32(SecureProtocol.maximumRecordLength))
    #expect(openAll(pair.opener(), [(header + [0x11])[...]], finish: false).error == nil)
  }

  @Test("impossible records are malformed before decryption")
  func malformedHeaders() {
    let pair = RecordPair(cipher: .chacha20Poly1305)
    for (bytes, reason) in [
      ([0, 0, 0, 16, 0x11] as [UInt8], "a RECORD of length 16 is shorter than its tag"),
      ([0, 0, 0, 18, 0x12], "a CLOSE record of length 18 is not empty"),
      ([0, 0, 0, 17, 0x05], "type 0x5 (record 0) is not RECORD (0x11), CLOSE (0x12) or PADDED (0x13)"),
      // Found by the fuzzer: length 0 followed by 0x0A once reached the v1 ERROR decoder.
      ([0, 0, 0, 0, 0x0A, 0, 0, 0x3F, 0x3F], "a frame of length 0"),
    ] {
      #expect(openAll(pair.opener(), [bytes[...]], finish: false).error == .malformedRecord(reason))
    }
  }

  @Test("a plaintext ERROR is accepted only instead of the first record")
  func plaintextError() {
    let pair = RecordPair(cipher: .chacha20Poly1305)
    let error = FrameEncoder.encode(.error(code: .wrongPeer, message: "not you"))
    #expect(openAll(pair.opener(), [error[...]]).error == .peerAborted(code: .wrongPeer, message: "not you"))
    let (bytes, _) = pair.stream([[1]], close: false)
    let late = openAll(pair.opener(), [(bytes + error)[...]])
    #expect(late.error == .malformedRecord("type 0xa (record 1) is not RECORD (0x11), CLOSE (0x12) or PADDED (0x13)"))
    #expect(late.plaintext == [1])
  }

  @Test("another key or another cipher does not open the stream")
  func wrongKey() throws {
    let pair = RecordPair(cipher: .chacha20Poly1305)
    let (bytes, _) = pair.stream([[1, 2, 3]])
    let other = RecordOpener(cipher: .chacha20Poly1305, key: SecretBytes([UInt8](repeating: 1, count: 32)))
    #expect(openAll(other, [bytes[...]]).error == .decryptFailed(sequence: 0))
    try #require(RecordCipher.aes256GCM.isAvailable)
    #expect(openAll(RecordOpener(cipher: .aes256GCM, key: pair.key), [bytes[...]]).error == .decryptFailed(sequence: 0))
  }

  @Test("after the first error the opener stays failed")
  func staysFailed() {
    let pair = RecordPair(cipher: .chacha20Poly1305)
    let opener = pair.opener()
    opener.append([0xFF, 0xFF, 0xFF, 0xFF])
    #expect(throws: RecordError.recordTooLarge(length: .max)) { try opener.next() }
    let (good, _) = pair.stream([[1]])
    opener.append(good)
    #expect(throws: RecordError.recordTooLarge(length: .max)) { try opener.next() }
    #expect(throws: RecordError.recordTooLarge(length: .max)) { try opener.finish() }
  }

  private func isMalformed(_ error: RecordError) -> Bool {
    if case .malformedRecord = error { return true }
    return false
  }
}
