import NearbyCore

@testable import NearbyCrypto

extension CryptoVectors {
  static let recordKey = (0..<32).map { UInt8(0xA0 + $0) }
  static let recordInterval = RekeyInterval(records: 3, bytes: 64)
  static let recordPlaintexts: [[UInt8]] = [
    Array("hello".utf8), [UInt8](repeating: 0x61, count: 40), [UInt8](repeating: 0x62, count: 30), Array("one".utf8), Array("two".utf8),
    Array("three".utf8), Array("four".utf8),
  ]

  /// A stream of records and its CLOSE, each with the key and nonce it was sealed under.
  /// `padded`: PADDED records as Nearby pads them (to a multiple of 128 bytes), each with
  /// its number of zeros (`padding`).
  static func records(name: String, cipher: RecordCipher, padded: Bool = false) -> Object {
    let sealer = RecordSealer(cipher: cipher, key: SecretBytes(recordKey), rekeyInterval: recordInterval, padsShortRecords: padded)
    var keys = RecordKeyState(cipher: cipher, key: SecretBytes(recordKey), interval: recordInterval)
    var entries: [Object] = []
    var stream: [UInt8] = []
    for index in 0...recordPlaintexts.count {
      let plaintext = index < recordPlaintexts.count ? recordPlaintexts[index] : []
      let entry: Object = [
        "sequence": "\(keys.sequence)", "epoch": "\(keys.epoch)", "key": keys.key.copiedBytes.hexString, "nonce": keys.nonce.hexString,
      ]
      var bytes: [UInt8] = []
      if index < recordPlaintexts.count { sealer.seal(plaintext, into: &bytes) } else { sealer.close(into: &bytes) }
      let sealedPlaintext = bytes.count - 5 - AEAD.tagCount
      keys.advance(plaintextCount: sealedPlaintext)
      stream += bytes
      let type = index == recordPlaintexts.count ? "CLOSE" : padded ? "PADDED" : "RECORD"
      var fields: Object = ["type": type, "plaintext": plaintext.hexString, "hex": bytes.hexString]
      if padded, index < recordPlaintexts.count { fields["padding"] = "\(sealedPlaintext - plaintext.count - 1)" }
      entries.append(entry.merging(fields) { a, _ in a })
    }
    return [
      "name": name, "cipher": cipher.description, "key": recordKey.hexString,
      "rekeyInterval": ["records": "\(recordInterval.records)", "bytes": "\(recordInterval.bytes)"], "records": entries,
      "stream": stream.hexString,
    ]
  }

  /// Streams sealed with ``recordKey`` (ChaCha20-Poly1305, the same interval) that an
  /// opener must refuse, with the plaintext it may deliver before the error.
  static func recordFailures() -> [Object] {
    let sealer = RecordSealer(cipher: .chacha20Poly1305, key: SecretBytes(recordKey), rekeyInterval: recordInterval)
    var r: [[UInt8]] = []
    for plaintext in recordPlaintexts.prefix(4) {
      var bytes: [UInt8] = []
      sealer.seal(plaintext, into: &bytes)
      r.append(bytes)
    }
    var close: [UInt8] = []
    sealer.close(into: &close)
    var tampered = r[1]
    tampered[10] ^= 0x01
    var retyped = r[0]
    retyped[4] = SecureFrameType.close.rawValue
    var streams: [(String, [UInt8])] = [
      ("a ciphertext byte of record 1 flipped", r[0] + tampered + r[2] + close),
      ("records 0 and 1 swapped", r[1] + r[0] + r[2] + close),
      ("record 0 replayed", r[0] + r[0] + r[1] + close),
      ("record 1 dropped (across the key change)", r[0] + r[2] + r[3] + close),
      ("the stream cut after record 3, without CLOSE", r[0] + r[1] + r[2] + r[3]),
      ("the stream cut inside record 1", r[0] + Array(r[1].prefix(20))),
      ("bytes after CLOSE", r[0] + r[1] + r[2] + r[3] + close + [0]),
      ("a length of 65554 (one more than the maximum)", [0, 1, 0, 0x12]),
      ("a RECORD shorter than its tag", [0, 0, 0, 0x10, 0x11]),
      ("a RECORD whose type byte says CLOSE", retyped),
    ]
    streams.append(("an unknown type byte", [0, 0, 0, 0x11, 0x14] + [UInt8](repeating: 0, count: 16)))
    streams += [
      ("a PADDED record with no room for its padding's count", [0, 0, 0, 0x11, 0x13] + [UInt8](repeating: 0, count: 16)),
      ("a PADDED record whose count is its whole plaintext", r[0] + forgedPadded([1, 2, 3, 4], sequence: 1)),
      ("a PADDED record whose padding is not all zeros", r[0] + forgedPadded([1, 2, 0, 7, 0, 3], sequence: 1)),
    ]
    return streams.map { name, stream in
      let opener = RecordOpener(cipher: .chacha20Poly1305, key: SecretBytes(recordKey), rekeyInterval: recordInterval)
      let result = openAll(opener, [stream[...]])
      return ["name": name, "stream": stream.hexString, "delivered": result.plaintext.hexString, "error": result.error!.name]
    }
  }

  /// An authentic PADDED record (ChaCha20-Poly1305, ``recordKey``, record `sequence` of the
  /// short interval) of `plaintext` as it is, whatever its padding says.
  static func forgedPadded(_ plaintext: [UInt8], sequence: Int) -> [UInt8] {
    var keys = RecordKeyState(cipher: .chacha20Poly1305, key: SecretBytes(recordKey), interval: recordInterval)
    // Record 0 of the failure streams is "hello" (5 bytes), sealed as a RECORD.
    for index in 0..<sequence { keys.advance(plaintextCount: recordPlaintexts[index].count) }
    let length = 1 + plaintext.count + AEAD.tagCount
    var record = [0, 0, UInt8(length >> 8), UInt8(length & 0xFF), SecureFrameType.padded.rawValue]
    record += [UInt8](repeating: 0, count: plaintext.count + AEAD.tagCount)
    record.withUnsafeMutableBytes { buffer in
      plaintext.withUnsafeBytes { plaintext in
        keys.seal(additionalData: UnsafeRawBufferPointer(rebasing: buffer[0..<5]), plaintext: plaintext, into: buffer.baseAddress! + 5)
      }
    }
    return record
  }

  /// An envelope to everyone behind a relay (bob and carol) and a private one to carol, each
  /// with its random draws and the MESSAGE frame that carries it (as its origin sends it).
  static func envelopes() -> [Object] {
    [
      envelope(
        name: "to everyone behind the relay: bob and carol (flags toEveryone)", body: Array("meet at the north door".utf8), flags: .toEveryone,
        header: Envelope.Header(
          origin: Fixture.alice.peerID, messageID: 0x1122_3344_5566_7788, timestamp: 1_767_225_600_123,
          recipients: [Fixture.bob.peerID, Fixture.carol.peerID]),
        recipients: [("bob", Fixture.bob), ("carol", Fixture.carol)], seed: 0x66),
      envelope(
        name: "private to carol (no flags)", body: Array("only for carol".utf8), flags: [],
        header: Envelope.Header(
          origin: Fixture.alice.peerID, messageID: 0x1122_3344_5566_7789, timestamp: 1_767_225_601_000, recipients: [Fixture.carol.peerID]),
        recipients: [("carol", Fixture.carol)], seed: 0x77),
    ]
  }

  static func envelope(
    name: String, body: [UInt8], flags: Envelope.Flags, header: Envelope.Header, recipients: [(name: String, key: IdentityKeyPair)], seed: UInt8
  ) -> Object {
    var random = SeededCryptoRandom(repeating: seed)
    let sealed = try! Envelope.seal(
      body, header: header, flags: flags, recipientKeys: recipients.map(\.key.publicKey), origin: Fixture.alice, random: &random)
    // The same draws again: the content key first, then the ephemeral secret.
    var replay = SeededCryptoRandom(repeating: seed)
    let contentKey = replay.bytes(32)
    let ephemeralSecret = replay.bytes(32)
    let wrapsEnd = 66 + Envelope.wrapCount * recipients.count
    let message = Frame.Message(
      id: header.messageID, sender: header.origin, timestamp: header.timestamp, hopLimit: ProtocolLimits.initialHopLimit,
      recipients: header.recipients, body: sealed)
    return [
      "name": name, "origin": "alice", "recipients": recipients.map(\.name), "messageID": "\(header.messageID)",
      "timestamp": "\(header.timestamp)", "flags": Int(flags.rawValue), "body": body.hexString, "contentKey": contentKey.hexString,
      "ephemeralSecret": ephemeralSecret.hexString, "ephemeralPublic": Array(sealed[2..<34]).hexString,
      "commitment": Array(sealed[34..<66]).hexString,
      "wraps": (0..<recipients.count).map { Array(sealed[(66 + Envelope.wrapCount * $0)..<(114 + Envelope.wrapCount * $0)]).hexString },
      "sealedBody": Array(sealed[wrapsEnd..<(sealed.count - 64)]).hexString, "signature": Array(sealed.suffix(64)).hexString,
      "sealed": sealed.hexString, "hopLimit": Int(message.hopLimit), "message": FrameEncoder.encode(.message(message)).hexString,
    ]
  }

  static func receipt() -> Object {
    let receipt = SignedReceipt(origin: Fixture.alice.peerID, messageIDs: [1, 2, UInt64.max], recipient: Fixture.bob)
    return [
      "origin": "alice", "recipient": "bob", "messageIDs": receipt.messageIDs.map { "\($0)" }, "signature": receipt.signature.hexString,
      "hex": receipt.encoded().hexString,
      "frame": FrameEncoder.encode(
        .delivered(Frame.Delivered(origin: receipt.origin, recipient: receipt.recipient, ids: receipt.messageIDs, signature: receipt.signature))
      ).hexString,
    ]
  }
}
