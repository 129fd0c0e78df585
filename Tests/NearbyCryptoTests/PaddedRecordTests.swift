import NearbyCore
import Testing

@testable import NearbyCrypto

/// PADDED records (PROTOCOL.md 3.10): a sealer that pads short records rounds their
/// plaintext up to a multiple of 128 bytes with zeros and their count; the opener gives back
/// exactly the frames, and refuses padding that is not what the format says.
@Suite("Records: PADDED records")
struct PaddedRecordTests {
  static let ciphers = Fixture.availableCiphers
  let key = SecretBytes((0..<32).map { UInt8(0xA0 + $0) })

  func sealer(_ cipher: RecordCipher, interval: RekeyInterval = .standard) -> RecordSealer {
    RecordSealer(cipher: cipher, key: key, rekeyInterval: interval, padsShortRecords: true)
  }

  func opener(_ cipher: RecordCipher, interval: RekeyInterval = .standard) -> RecordOpener {
    RecordOpener(cipher: cipher, key: key, rekeyInterval: interval)
  }

  /// The type byte and length of each record in `bytes`.
  static func records(_ bytes: [UInt8]) -> [(type: UInt8, length: Int)] {
    var result: [(type: UInt8, length: Int)] = []
    var start = 0
    while start + 5 <= bytes.count {
      let length = bytes[start..<start + 4].reduce(0) { $0 << 8 | Int($1) }
      result.append((bytes[start + 4], length))
      start += 4 + length
    }
    #expect(start == bytes.count, "the stream ends inside a record")
    return result
  }

  @Test("every size from 1 to 1 100 bytes: PADDED to a multiple of 128 below 1 024, a RECORD from there", arguments: ciphers)
  func everySize(cipher: RecordCipher) throws {
    // A short byte interval: both sides must count the padded plaintext alike, or the keys part.
    let interval = RekeyInterval(records: 1 << 20, bytes: 5000)
    let sealer = sealer(cipher, interval: interval)
    let opener = opener(cipher, interval: interval)
    for count in 1...1100 {
      let frames = (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ count) }
      var bytes: [UInt8] = []
      sealer.seal(frames, into: &bytes)
      #expect(bytes.count == sealer.sealedCount(of: count), "\(count) bytes")
      let records = Self.records(bytes)
      #expect(records.count == 1)
      let plaintext = records[0].length - 1 - AEAD.tagCount
      if count < 1024 {
        #expect(records[0].type == SecureFrameType.padded.rawValue, "\(count) bytes")
        #expect(plaintext % 128 == 0 && plaintext > count && plaintext - count <= 128, "\(count) bytes in \(plaintext)")
      } else {
        #expect(records[0].type == SecureFrameType.record.rawValue, "\(count) bytes")
        #expect(plaintext == count)
      }
      opener.append(bytes)
      #expect(try opener.next() == frames, "\(count) bytes")
    }
    #expect(sealer.epoch > 0, "the byte interval was reached")
    #expect(opener.epoch == sealer.epoch)
  }

  @Test("a padded stream opens identically whole, split at every byte, and byte by byte", arguments: ciphers)
  func splits(cipher: RecordCipher) {
    let sealer = sealer(cipher)
    let plaintexts: [[UInt8]] = [Array("hello".utf8), [UInt8](repeating: 9, count: 127), [UInt8](repeating: 3, count: 128), [0]]
    var bytes: [UInt8] = []
    for plaintext in plaintexts { sealer.seal(plaintext, into: &bytes) }
    sealer.close(into: &bytes)
    #expect(Self.records(bytes).map(\.type) == [0x13, 0x13, 0x13, 0x13, 0x12])
    #expect(Self.records(bytes).map(\.length) == [145, 145, 273, 145, 17])
    let expected = plaintexts.flatMap { $0 }
    for index in 0...bytes.count {
      let result = openAll(opener(cipher), split(bytes, at: index))
      #expect(result.error == nil, "split at \(index)")
      #expect(result.plaintext == expected, "split at \(index)")
      #expect(result.records == 4, "split at \(index)")
    }
    #expect(openAll(opener(cipher), byteByByte(bytes)).plaintext == expected)
  }

  @Test("past 64 KiB, full RECORDs and a PADDED last one; both ways of sealing write the same", arguments: ciphers)
  func longPlaintext(cipher: RecordCipher) {
    let big = (0..<(2 * 65_536 + 300)).map { UInt8(truncatingIfNeeded: $0 &* 31) }
    var array: [UInt8] = []
    sealer(cipher).seal(big, into: &array)
    #expect(Self.records(array).map(\.type) == [0x11, 0x11, 0x13])
    #expect(Self.records(array).map(\.length) == [65_553, 65_553, 1 + 384 + 16])
    let raw = sealer(cipher)
    let count = raw.sealedCount(of: big.count)
    #expect(count == array.count)
    var output = [UInt8](repeating: 0, count: count)
    let written = big.withUnsafeBytes { plaintext in output.withUnsafeMutableBytes { raw.seal(plaintext, into: $0) } }
    #expect(written == count)
    #expect(output == array)
    #expect(openAll(opener(cipher), [array[...]], finish: false).plaintext == big)
  }

  @Test("a sealer that does not pad writes RECORDs only", arguments: ciphers)
  func notPadding(cipher: RecordCipher) {
    let sealer = RecordSealer(cipher: cipher, key: key)
    var bytes: [UInt8] = []
    for count in [1, 124, 127, 128, 1000] { sealer.seal([UInt8](repeating: 1, count: count), into: &bytes) }
    #expect(Self.records(bytes).map(\.type) == [0x11, 0x11, 0x11, 0x11, 0x11])
    #expect(Self.records(bytes).map(\.length) == [18, 141, 144, 145, 1017])
  }

  /// An authentic PADDED record of `plaintext` as it is, whatever its padding says: what a
  /// peer holding the key can send.
  func forged(_ cipher: RecordCipher, _ plaintext: [UInt8], sequence: Int = 0) -> [UInt8] {
    var keys = RecordKeyState(cipher: cipher, key: key, interval: .standard)
    for _ in 0..<sequence { keys.advance(plaintextCount: 0) }
    let length = 1 + plaintext.count + AEAD.tagCount
    var record = [UInt8(length >> 24 & 0xFF), UInt8(length >> 16 & 0xFF), UInt8(length >> 8 & 0xFF), UInt8(length & 0xFF), 0x13]
    record += [UInt8](repeating: 0, count: plaintext.count + AEAD.tagCount)
    record.withUnsafeMutableBytes { buffer in
      plaintext.withUnsafeBytes { plaintext in
        keys.seal(additionalData: UnsafeRawBufferPointer(rebasing: buffer[0..<5]), plaintext: plaintext, into: buffer.baseAddress! + 5)
      }
    }
    return record
  }

  @Test(
    "padding that is not zeros and their count is malformed; what came before is delivered",
    arguments: [
      ("the count is the plaintext's length", [1, 2, 3, 4]),
      ("the count is 255 in 128 bytes", [UInt8](repeating: 0, count: 127) + [255]),
      ("a padding byte is not zero", [1, 2, 0, 7, 0, 3]),
      ("only the count, counting one zero", [1]),
    ] as [(String, [UInt8])])
  func badPadding(_ name: String, _ plaintext: [UInt8]) throws {
    let cipher = try #require(Self.ciphers.first)
    var good: [UInt8] = []
    sealer(cipher).seal([UInt8](repeating: 5, count: 10), into: &good)
    let result = openAll(opener(cipher), [(good + forged(cipher, plaintext, sequence: 1))[...]], finish: false)
    #expect(result.plaintext == [UInt8](repeating: 5, count: 10), "\(name)")
    guard case .malformedRecord(let reason) = result.error else {
      Issue.record("\(name): \(String(describing: result.error))")
      return
    }
    #expect(reason.contains("PADDED"), "\(name): \(reason)")
  }

  @Test("a non-zero byte anywhere in padding of any length is malformed")
  func everyPaddingByte() throws {
    let cipher = try #require(Self.ciphers.first)
    for zeros in 1...127 {
      for position in 0..<zeros {
        var plaintext = [UInt8](repeating: 0, count: 3 + zeros + 1)
        plaintext[0...2] = [7, 8, 9]
        plaintext[3 + position] = 0x40
        plaintext[plaintext.count - 1] = UInt8(zeros)
        let result = openAll(opener(cipher), [forged(cipher, plaintext)[...]], finish: false)
        #expect(result.error == .malformedRecord("a PADDED record's padding (record 0) is not all zeros"), "\(zeros) zeros, byte \(position)")
        #expect(result.plaintext.isEmpty)
      }
    }
  }

  @Test("unusual but well-formed padding opens: none at all, or all but the count")
  func unusualPadding() throws {
    let cipher = try #require(Self.ciphers.first)
    #expect(openAll(opener(cipher), [forged(cipher, [9, 9, 0])[...]], finish: false).plaintext == [9, 9])
    #expect(openAll(opener(cipher), [forged(cipher, [0, 0, 0, 3])[...]], finish: false).plaintext == [])
    #expect(openAll(opener(cipher), [forged(cipher, [0])[...]], finish: false).plaintext == [])
  }

  @Test("a PADDED record with no room for its count is refused before decryption")
  func tooShort() throws {
    let cipher = try #require(Self.ciphers.first)
    let result = openAll(opener(cipher), [([0, 0, 0, 17, 0x13] + [UInt8](repeating: 0, count: 16))[...]], finish: false)
    #expect(result.error == .malformedRecord("a PADDED record of length 17 has no room for its padding's count"))
  }

  @Test("the type byte is authenticated: a PADDED record relabelled RECORD, or the reverse, fails to decrypt", arguments: ciphers)
  func relabelled(cipher: RecordCipher) {
    var padded: [UInt8] = []
    sealer(cipher).seal([1, 2, 3], into: &padded)
    padded[4] = SecureFrameType.record.rawValue
    #expect(openAll(opener(cipher), [padded[...]], finish: false).error == .decryptFailed(sequence: 0))
    var plain: [UInt8] = []
    RecordSealer(cipher: cipher, key: key).seal([1, 2, 3], into: &plain)
    plain[4] = SecureFrameType.padded.rawValue
    #expect(openAll(opener(cipher), [plain[...]], finish: false).error == .decryptFailed(sequence: 0))
  }
}
