import NearbyCore
import Testing

@Suite("Frame codec properties (random frames)")
struct FrameCodecPropertyTests {
  static func randomName(_ g: inout SeededGenerator) -> DisplayName {
    let alphabet = ["a", "b", "Z", "é", "日", "🦊", " ", "-", "."]
    var text = ""
    let count = Int.random(in: 1...12, using: &g)
    for _ in 0..<count { text += alphabet.randomElement(using: &g)! }
    return try! DisplayName(text)
  }

  static func randomBytes(_ g: inout SeededGenerator, max: Int) -> [UInt8] {
    (0..<Int.random(in: 0...max, using: &g)).map { _ in UInt8.random(in: 0...255, using: &g) }
  }

  static func randomTransferFrame(_ g: inout SeededGenerator) -> TransferFrame {
    let id = TransferID(PeerID.random(using: &g))
    let index = UInt16.random(in: 0...4095, using: &g)
    switch Int.random(in: 1...8, using: &g) {
    case 1:
      let files = (0..<Int.random(in: 1...5, using: &g)).map { _ in
        OfferedFile(name: randomName(&g).value, size: UInt64.random(in: 0...(1 << 40), using: &g), flags: UInt8.random(in: 0...1, using: &g))
      }
      return TransferFrame(id, .offer(files))
    case 2:
      let files = (0..<Int.random(in: 1...5, using: &g)).map { position in
        AcceptedFile(index: UInt16(position), status: Bool.random(using: &g) ? .send : .have, offset: g.next())
      }
      return TransferFrame(id, .accept(files))
    case 3:
      var data = randomBytes(&g, max: 2000)
      if data.isEmpty { data = [1] }
      return TransferFrame(id, .chunk(index: index, offset: g.next(), data: data))
    case 4: return TransferFrame(id, .end(index: index, size: g.next(), hash: (0..<32).map { _ in UInt8.random(in: 0...255, using: &g) }))
    case 5: return TransferFrame(id, .ack(index: index, offset: g.next()))
    case 6: return TransferFrame(id, .resend(index: index, offset: g.next()))
    case 7: return TransferFrame(id, .verified(index: index))
    default: return TransferFrame(id, .cancel(TransferCancelReason(rawValue: UInt8.random(in: 0...255, using: &g)), randomName(&g).value))
    }
  }

  static func randomFrame(_ g: inout SeededGenerator) -> Frame {
    let id = { (g: inout SeededGenerator) in PeerID.random(using: &g) }
    switch FrameType.allCases.randomElement(using: &g)! {
    case .hello:
      let low = UInt8.random(in: 1...5, using: &g)
      return .hello(
        Frame.Hello(
          minVersion: low, maxVersion: low + UInt8.random(in: 0...3, using: &g), capabilities: Capabilities(rawValue: g.next32()),
          peer: Peer(id: id(&g), name: randomName(&g))))
    case .invite:
      return .invite(
        Frame.Invite(invitationID: g.next(), timeoutMilliseconds: UInt32.random(in: 100...600_000, using: &g), context: randomBytes(&g, max: 300)))
    case .accept: return .accept(invitationID: g.next())
    case .decline: return .decline(invitationID: g.next(), reason: DeclineReason(rawValue: UInt8.random(in: 0...255, using: &g)))
    case .message:
      let recipients = (0..<Int.random(in: 0...4, using: &g)).map { _ in id(&g) }
      return .message(
        Frame.Message(
          id: g.next(), sender: id(&g), timestamp: g.next(), hopLimit: UInt8.random(in: 0...255, using: &g), recipients: recipients,
          body: randomBytes(&g, max: 2000)))
    case .delivered:
      let signature: [UInt8]? = Bool.random(using: &g) ? (0..<64).map { _ in UInt8.random(in: 0...255, using: &g) } : nil
      return .delivered(
        Frame.Delivered(
          origin: id(&g), recipient: id(&g), ids: (0..<Int.random(in: 1...50, using: &g)).map { _ in g.next() }, signature: signature))
    case .ping: return .ping(nonce: g.next())
    case .pong: return .pong(nonce: g.next())
    case .goodbye: return .goodbye(GoodbyeReason(rawValue: UInt8.random(in: 0...255, using: &g)))
    case .error: return .error(code: ErrorCode(rawValue: UInt16.random(in: 0...65535, using: &g)), message: randomName(&g).value)
    case .roster:
      let entries = (0..<Int.random(in: 0...5, using: &g)).map { _ in
        Frame.Roster.Entry(
          peer: Peer(id: id(&g), name: randomName(&g)), hops: UInt8.random(in: 0...255, using: &g),
          publicKey: (0..<32).map { _ in UInt8.random(in: 0...255, using: &g) })
      }
      return .roster(Frame.Roster(kind: RosterKind(rawValue: UInt8.random(in: 0...2, using: &g))!, entries: entries))
    case .undeliverable:
      return .undeliverable(
        Frame.Undeliverable(
          origin: id(&g), messageID: g.next(), recipient: id(&g), reason: UndeliverableReason(rawValue: UInt8.random(in: 0...255, using: &g))))
    case .verify: return .verify
    case .resume:
      let received: UInt64? = Bool.random(using: &g) ? g.next() : nil
      let delivered: UInt64? = received != nil && Bool.random(using: &g) ? g.next() : nil
      return .resume(Frame.Resume(session: g.next(), received: received, delivered: delivered))
    case .file: return .file(randomTransferFrame(&g))
    }
  }

  @Test("random frames round-trip through random chunkings", arguments: 0..<20)
  func roundTrip(seed: UInt64) {
    var g = SeededGenerator(seed: seed)
    let frames = (0..<50).map { _ in Self.randomFrame(&g) }
    var stream: [UInt8] = []
    for frame in frames { FrameEncoder.encode(frame, into: &stream) }
    var chunks: [ArraySlice<UInt8>] = []
    var index = 0
    while index < stream.count {
      let size = Int.random(in: 1...700, using: &g)
      chunks.append(stream[index..<min(index + size, stream.count)])
      index += size
    }
    let result = decodeAll(chunks)
    #expect(result.error == nil)
    #expect(result.frames == frames)
  }

  @Test("any prefix of a valid stream is truncated or complete, never another error", arguments: 0..<5)
  func prefixes(seed: UInt64) {
    var g = SeededGenerator(seed: 1000 + seed)
    var stream: [UInt8] = []
    for _ in 0..<5 { FrameEncoder.encode(Self.randomFrame(&g), into: &stream) }
    for cut in 0...stream.count {
      let result = decodeAll([stream[..<cut]])
      if let error = result.error {
        guard case .truncated = error else {
          Issue.record("prefix of \(cut) bytes gave \(error)")
          return
        }
      }
    }
  }

  @Test("random garbage never crashes the decoder", arguments: 0..<10)
  func garbage(seed: UInt64) {
    var g = SeededGenerator(seed: 7000 + seed)
    for _ in 0..<200 {
      var bytes = Self.randomBytes(&g, max: 64)
      // Mostly plausible lengths, so payload parsing is exercised too.
      if bytes.count >= 5, Bool.random(using: &g) {
        let length = UInt32(bytes.count - 4)
        bytes[0] = 0
        bytes[1] = 0
        bytes[2] = UInt8(length >> 8)
        bytes[3] = UInt8(length & 0xFF)
        bytes[4] = UInt8.random(in: 1...12, using: &g)
      }
      _ = decodeAll([bytes[...]])
    }
  }

  @Test func decoderReleasesMemoryWhenIdle() throws {
    let decoder = FrameDecoder()
    var big: [UInt8] = []
    FrameEncoder.encode(
      .message(Frame.Message(id: 1, sender: Fixture.aliceID, timestamp: 0, recipients: [], body: Array(repeating: 7, count: 500_000))), into: &big)
    decoder.append(big)
    #expect(try decoder.next() != nil)
    #expect(try decoder.next() == nil)
    // Kept for the next large frame until the owner says traffic is light.
    #expect(decoder.allocatedByteCount > 65_536)
    decoder.shrinkIfEmpty()
    #expect(decoder.allocatedByteCount == 0)
    // 1 MiB or more is given back at once.
    var huge: [UInt8] = []
    FrameEncoder.encode(
      .message(Frame.Message(id: 2, sender: Fixture.aliceID, timestamp: 0, recipients: [], body: Array(repeating: 7, count: 1_000_000))), into: &huge)
    decoder.append(huge)
    #expect(try decoder.next() != nil)
    #expect(try decoder.next() == nil)
    #expect(decoder.allocatedByteCount == 0)
  }
}

extension RandomNumberGenerator {
  mutating func next32() -> UInt32 { UInt32(truncatingIfNeeded: next()) }
}
