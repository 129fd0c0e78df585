// libFuzzer entry point for the version 2 handshake and the record opener. Not part of the
// package build: scripts/fuzz compiles it in one module with Sources/NearbyCore/*.swift and
// Sources/NearbyCrypto/*.swift (and -I Sources/CSodium -lsodium).
//
// Input layout: the first byte picks the machine (byte % 3: 0 a responder, 1 an initiator,
// 2 a record opener) and how the rest is split into chunks ((byte / 3) % 32 + 1 bytes). The
// keys are those of Protocol/vectors/crypto.json (first handshake; record key and short
// rekey interval), so the corpus seeded from the vectors reaches every state.

let fuzzAlice = IdentityKeyPair(seedBytes: (0..<32).map { UInt8($0) })!
let fuzzBob = IdentityKeyPair(seedBytes: (0..<32).map { UInt8(32 + $0) })!
let fuzzRecordKey = (0..<32).map { UInt8(0xA0 + $0) }
let fuzzInterval = RekeyInterval(records: 3, bytes: 64)

func fuzzEphemeral(_ seed: UInt8) -> EphemeralKeyPair {
  EphemeralKeyPair(secretKey: SecretBytes([seed] + (1...31).map { UInt8($0) }))
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzCrypto(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
  let bytes = Array(UnsafeBufferPointer(start: data, count: size))
  guard let first = bytes.first else { return 0 }
  let chunk = Int(first / 3) % 32 + 1
  let chunks = stride(from: 1, to: bytes.count, by: chunk).map { bytes[$0..<min($0 + chunk, bytes.count)] }
  switch first % 3 {
  case 0:
    var responder = Handshake(role: .responder, identity: fuzzBob, payload: [1, 2], ciphers: .chacha20Poly1305, ephemeral: fuzzEphemeral(0x22))
    fuzzHandshake(&responder, chunks)
  case 1:
    var initiator = Handshake(
      role: .initiator(expecting: fuzzBob.peerID), identity: fuzzAlice, payload: [3], ciphers: .chacha20Poly1305, ephemeral: fuzzEphemeral(0x11))
    _ = initiator.start()
    fuzzHandshake(&initiator, chunks)
  default:
    let opener = RecordOpener(cipher: .chacha20Poly1305, key: SecretBytes(fuzzRecordKey), rekeyInterval: fuzzInterval)
    fuzzRecords(opener, chunks, inputCount: bytes.count)
  }
  return 0
}

/// Feeds the chunks to a handshake; a completed one hands its remaining bytes, and the
/// chunks after, to a record opener.
func fuzzHandshake(_ handshake: inout Handshake, _ chunks: [ArraySlice<UInt8>]) {
  var opener: RecordOpener?
  var fed = 0
  for chunk in chunks {
    fed += chunk.count
    if let opener {
      opener.append(chunk)
      continue
    }
    let output = handshake.receive(chunk)
    precondition(output.send.count <= 8192 + 5, "a handshake step wrote \(output.send.count) bytes")
    precondition(output.result == nil || output.error == nil, "completed and failed at once")
    if let error = output.error {
      precondition(handshake.state == .failed(error))
      precondition(handshake.receive(chunk).send.isEmpty, "bytes after a failure produced output")
      return
    }
    if let result = output.result {
      precondition(output.remainingBytes.count <= fed)
      let next = result.makeOpener()
      next.append(output.remainingBytes)
      opener = next
    }
  }
  if let opener {
    fuzzRecords(opener, [], inputCount: fed)
  } else {
    _ = handshake.connectionClosed()
  }
}

/// Opens the chunks; checks that plaintext never exceeds the input and memory stays bounded.
func fuzzRecords(_ opener: RecordOpener, _ chunks: [ArraySlice<UInt8>], inputCount: Int) {
  var delivered = 0
  do {
    for chunk in chunks {
      opener.append(chunk)
      while try opener.openNext({ delivered += $0.count }) {}
      precondition(
        opener.allocatedByteCount <= 4 * SecureProtocol.maximumRecordLength + 4 * chunk.count, "opener holds \(opener.allocatedByteCount) bytes")
    }
    while try opener.openNext({ delivered += $0.count }) {}
    try opener.finish()
    precondition(opener.isClosed, "finish() passed without CLOSE")
  } catch {
    // After the first error the opener stays failed with the same error.
    do {
      _ = try opener.next()
      preconditionFailure("an opener recovered from \(error)")
    } catch {}
  }
  precondition(delivered <= inputCount, "delivered \(delivered) plaintext bytes from \(inputCount) input bytes")
}
