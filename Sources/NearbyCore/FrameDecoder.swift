/// An incremental frame decoder: accepts bytes in chunks of any size and returns whole
/// frames as they complete.
///
/// The decoder owns a byte buffer that the transport reads into directly
/// (``withWritableBytes(minimumCount:_:)``), so bytes are copied out of the kernel once.
/// It checks a frame's length as soon as the four length bytes are there, before it makes
/// room for the payload; after the first error it stays failed.
package final class FrameDecoder {
  private enum State {
    case waitingForHeader
    case waitingForFrame(length: Int)
    case failed(FrameDecodingError)
  }

  package let maximumFrameLength: Int
  /// Where the buffer comes from (see ``BufferAllocator``).
  package let allocator: BufferAllocator
  // The stored properties below are `@exclusivity(unchecked)`: only its connection's loop
  // thread uses them, and the runtime's check of every access to a class's property was about
  // a tenth of the instructions of a message's round trip (callgrind; see the README's
  // benchmarks).
  @exclusivity(unchecked) private var storage: UnsafeMutableRawPointer?
  @exclusivity(unchecked) private var capacity = 0
  @exclusivity(unchecked) private var readIndex = 0
  @exclusivity(unchecked) private var writeIndex = 0
  @exclusivity(unchecked) private var state = State.waitingForHeader

  package init(maximumFrameLength: Int = ProtocolLimits.maximumFrameLength, allocator: BufferAllocator = .heap) {
    self.maximumFrameLength = maximumFrameLength
    self.allocator = allocator
  }

  deinit { release() }

  private func release() {
    if let storage { allocator.deallocate(storage, capacity) }
    storage = nil
  }

  /// Bytes received but not yet returned as frames.
  package var bufferedByteCount: Int { writeIndex - readIndex }

  /// The memory the decoder holds.
  package var allocatedByteCount: Int { capacity }

  /// Appends bytes received from the peer.
  package func append(_ bytes: some Collection<UInt8>) {
    let count = bytes.count
    guard count > 0 else { return }
    _ = withWritableBytes(minimumCount: count) { buffer in
      UnsafeMutableRawBufferPointer(rebasing: buffer[0..<count]).copyBytes(from: bytes)
      return count
    }
  }

  /// Lends writable space at the end of the buffer (at least `minimumCount` bytes, more if
  /// the buffer has it), for example to `read(2)` into.
  /// - Parameter body: writes into the space and returns how many bytes it wrote.
  /// - Returns: what `body` returned.
  @discardableResult
  package func withWritableBytes<E: Error>(minimumCount: Int, _ body: (UnsafeMutableRawBufferPointer) throws(E) -> Int) throws(E) -> Int {
    reserve(max(minimumCount, 1))
    let space = UnsafeMutableRawBufferPointer(start: storage! + writeIndex, count: capacity - writeIndex)
    let written = try body(space)
    precondition(written >= 0 && written <= space.count, "wrote outside the lent space")
    writeIndex += written
    return written
  }

  /// The next complete frame, or `nil` when more bytes are needed.
  /// - Throws: ``FrameDecodingError``; the decoder then stays failed.
  package func next() throws(FrameDecodingError) -> Frame? {
    while true {
      switch state {
      case .failed(let error):
        throw error
      case .waitingForHeader:
        guard bufferedByteCount >= 4 else {
          releaseIfEmpty()
          return nil
        }
        let length = UInt32(bigEndian: storage!.loadUnaligned(fromByteOffset: readIndex, as: UInt32.self))
        if length == 0 { return try fail(.emptyFrame) }
        if length > UInt32(maximumFrameLength) { return try fail(.frameTooLarge(length: length)) }
        readIndex += 4
        state = .waitingForFrame(length: Int(length))
      case .waitingForFrame(let length):
        guard bufferedByteCount >= length else { return nil }
        let frameBytes = UnsafeRawBufferPointer(start: storage! + readIndex, count: length)
        readIndex += length
        state = .waitingForHeader
        do {
          return try Self.decodeBody(frameBytes)
        } catch {
          return try fail(error)
        }
      }
    }
  }

  /// Call at end of input.
  /// - Throws: ``FrameDecodingError/truncated(bufferedBytes:)`` when a frame was cut off,
  ///   or the error the decoder already failed with.
  package func finish() throws(FrameDecodingError) {
    switch state {
    case .failed(let error): throw error
    case .waitingForFrame(let length):
      throw .truncated(bufferedBytes: 4 + min(bufferedByteCount, length))
    case .waitingForHeader:
      if bufferedByteCount > 0 { throw .truncated(bufferedBytes: bufferedByteCount) }
    }
  }

  private func fail(_ error: FrameDecodingError) throws(FrameDecodingError) -> Frame? {
    state = .failed(error)
    throw error
  }

  /// Makes room for `count` more bytes, compacting or growing the buffer.
  private func reserve(_ count: Int) {
    if capacity - writeIndex >= count { return }
    let live = writeIndex - readIndex
    var needed = live + count
    if case .waitingForFrame(let length) = state { needed = max(needed, length) }
    if needed <= capacity, readIndex > 0 {
      if live > 0 { storage!.copyMemory(from: storage! + readIndex, byteCount: live) }
      readIndex = 0
      writeIndex = live
      return
    }
    var newCapacity = max(capacity, 4096)
    while newCapacity < needed { newCapacity *= 2 }
    let newStorage = allocator.allocate(newCapacity)
    if live > 0 { newStorage.copyMemory(from: storage! + readIndex, byteCount: live) }
    release()
    storage = newStorage
    capacity = newCapacity
    readIndex = 0
    writeIndex = live
  }

  /// When everything was consumed: starts over at the front, and gives back a buffer of
  /// 1 MiB or more (a huge frame) at once.
  private func releaseIfEmpty() {
    guard bufferedByteCount == 0 else { return }
    readIndex = 0
    writeIndex = 0
    if capacity >= 1 << 20 { shrinkIfEmpty() }
  }

  /// Gives back a buffer of more than 64 KiB when nothing is buffered, so idle connections
  /// stay small. Not done after every frame: a stream of large frames would then allocate
  /// (and, above the allocator's mmap threshold, map and fault in) a new buffer per frame.
  /// The owner calls this when traffic is light.
  package func shrinkIfEmpty() {
    guard bufferedByteCount == 0, capacity > 65_536 else { return }
    release()
    capacity = 0
    readIndex = 0
    writeIndex = 0
  }

  /// Discards the buffer (after a fatal error or when the connection closes).
  package func reset() {
    release()
    capacity = 0
    readIndex = 0
    writeIndex = 0
    state = .waitingForHeader
  }
}

extension FrameDecoder {
  /// Decodes one frame from its type byte and payload (the bytes after the length prefix).
  package static func decodeBody(_ bytes: UnsafeRawBufferPointer) throws(FrameDecodingError) -> Frame {
    precondition(!bytes.isEmpty)
    guard let type = FrameType(rawValue: bytes[0]) else { throw .unknownFrameType(bytes[0]) }
    var reader = ByteReader(UnsafeRawBufferPointer(rebasing: bytes[1...]), type: type)
    let frame: Frame
    switch type {
    case .hello: frame = .hello(try decodeHello(&reader))
    case .invite:
      let id = try reader.integer(UInt64.self, "invitationID")
      let timeout = try reader.integer(UInt32.self, "timeoutMs")
      guard ProtocolLimits.invitationTimeoutRange.contains(timeout) else {
        throw reader.malformed("timeoutMs \(timeout) is outside 100...600000")
      }
      let length = Int(try reader.integer(UInt16.self, "context length"))
      frame = .invite(Frame.Invite(invitationID: id, timeoutMilliseconds: timeout, context: try reader.array(length, "context")))
    case .accept:
      frame = .accept(invitationID: try reader.integer(UInt64.self, "invitationID"))
    case .decline:
      let id = try reader.integer(UInt64.self, "invitationID")
      frame = .decline(invitationID: id, reason: DeclineReason(rawValue: try reader.u8("reason")))
    case .message: frame = .message(try decodeMessage(&reader))
    case .delivered:
      let origin = try reader.peerID("origin")
      let recipient = try reader.peerID("recipient")
      let count = Int(try reader.integer(UInt16.self, "count"))
      guard (1...ProtocolLimits.maximumDeliveredIDs).contains(count) else {
        throw reader.malformed("count \(count) is outside 1...\(ProtocolLimits.maximumDeliveredIDs)")
      }
      guard reader.remaining >= count * 8 else { throw reader.malformed("the payload ends inside field 'ids'") }
      var ids = [UInt64]()
      ids.reserveCapacity(count)
      for _ in 0..<count { ids.append(try reader.integer(UInt64.self, "ids")) }
      var signature: [UInt8]?
      if reader.remaining > 0 {
        guard reader.remaining == 64 else { throw reader.malformed("\(reader.remaining) bytes after the ids: a signature is 64") }
        signature = try reader.array(64, "signature")
      }
      frame = .delivered(Frame.Delivered(origin: origin, recipient: recipient, ids: ids, signature: signature))
    case .ping: frame = .ping(nonce: try reader.integer(UInt64.self, "nonce"))
    case .pong: frame = .pong(nonce: try reader.integer(UInt64.self, "nonce"))
    case .goodbye: frame = .goodbye(GoodbyeReason(rawValue: try reader.u8("reason")))
    case .error:
      let code = ErrorCode(rawValue: try reader.integer(UInt16.self, "code"))
      let length = Int(try reader.integer(UInt16.self, "message length"))
      guard length <= ProtocolLimits.maximumErrorMessageBytes else {
        throw reader.malformed("message of \(length) bytes is longer than \(ProtocolLimits.maximumErrorMessageBytes)")
      }
      frame = .error(code: code, message: try reader.string(length, "message"))
    case .roster: frame = .roster(try decodeRoster(&reader))
    case .undeliverable:
      let origin = try reader.peerID("origin")
      let id = try reader.integer(UInt64.self, "messageID")
      let recipient = try reader.peerID("recipient")
      frame = .undeliverable(
        Frame.Undeliverable(origin: origin, messageID: id, recipient: recipient, reason: UndeliverableReason(rawValue: try reader.u8("reason"))))
    case .verify:
      frame = .verify
    case .resume:
      frame = .resume(try decodeResume(&reader))
    case .file:
      frame = .file(try decodeTransfer(&reader, length: bytes.count))
    }
    try reader.expectEnd()
    return frame
  }

  private static func decodeHello(_ reader: inout ByteReader) throws(FrameDecodingError) -> Frame.Hello {
    func invalid(_ reason: String) -> FrameDecodingError { .invalidHello(reason) }
    let magic = try reader.raw(4, "magic")
    guard magic.elementsEqual(ProtocolLimits.helloMagic) else { throw invalid("the magic is not NRBY") }
    let minVersion = try reader.u8("minVersion")
    let maxVersion = try reader.u8("maxVersion")
    guard minVersion >= 1 else { throw invalid("minVersion is 0") }
    guard minVersion <= maxVersion else { throw invalid("minVersion \(minVersion) is above maxVersion \(maxVersion)") }
    let capabilities = Capabilities(rawValue: try reader.integer(UInt32.self, "capabilities"))
    let id = try reader.peerID("peerID")
    guard id.isValid else { throw invalid("the peer id is all zeros") }
    let nameLength = Int(try reader.u8("name length"))
    let nameBytes = try reader.raw(nameLength, "name")
    let name: DisplayName
    do {
      name = try DisplayName(utf8: nameBytes)
    } catch {
      throw invalid("the name is invalid: \(error)")
    }
    return Frame.Hello(minVersion: minVersion, maxVersion: maxVersion, capabilities: capabilities, peer: Peer(id: id, name: name))
  }

  private static func decodeMessage(_ reader: inout ByteReader) throws(FrameDecodingError) -> Frame.Message {
    let id = try reader.integer(UInt64.self, "messageID")
    let sender = try reader.peerID("sender")
    let timestamp = try reader.integer(UInt64.self, "timestamp")
    let hopLimit = try reader.u8("hopLimit")
    let count = Int(try reader.integer(UInt16.self, "recipientCount"))
    guard count <= ProtocolLimits.maximumRecipients else {
      throw reader.malformed("recipientCount \(count) is above \(ProtocolLimits.maximumRecipients)")
    }
    var recipients = [PeerID]()
    if count > 0 {
      guard reader.remaining >= count * 16 else { throw reader.malformed("the payload ends inside field 'recipients'") }
      recipients.reserveCapacity(count)
      for _ in 0..<count {
        let recipient = try reader.peerID("recipients")
        guard recipient.isValid else { throw reader.malformed("a recipient id is all zeros") }
        recipients.append(recipient)
      }
      if count > 1, Set(recipients).count != count { throw reader.malformed("a recipient is listed twice") }
    }
    let length = Int(try reader.integer(UInt32.self, "body length"))
    guard length <= ProtocolLimits.maximumSealedBodyLength else {
      throw reader.malformed("body of \(length) bytes is longer than \(ProtocolLimits.maximumSealedBodyLength)")
    }
    let body = try reader.array(length, "body")
    return Frame.Message(id: id, sender: sender, timestamp: timestamp, hopLimit: hopLimit, recipients: recipients, body: body)
  }

  private static func decodeRoster(_ reader: inout ByteReader) throws(FrameDecodingError) -> Frame.Roster {
    let rawKind = try reader.u8("kind")
    let carriesSites = rawKind & RosterKind.sitesBit != 0
    guard let kind = RosterKind(rawValue: rawKind & ~RosterKind.sitesBit) else {
      throw reader.malformed("kind \(rawKind) is not 0, 1 or 2 (with bit 7 for sites)")
    }
    let count = Int(try reader.integer(UInt16.self, "count"))
    guard count <= ProtocolLimits.maximumRosterEntries else {
      throw reader.malformed("count \(count) is above \(ProtocolLimits.maximumRosterEntries)")
    }
    var entries = [Frame.Roster.Entry]()
    entries.reserveCapacity(min(count, reader.remaining / 50))
    for _ in 0..<count {
      let id = try reader.peerID("peerID")
      guard id.isValid else { throw reader.malformed("a roster peer id is all zeros") }
      let hops = try reader.u8("hops")
      let nameLength = Int(try reader.u8("name length"))
      let nameBytes = try reader.raw(nameLength, "name")
      let name: DisplayName
      do {
        name = try DisplayName(utf8: nameBytes)
      } catch {
        throw reader.malformed("a roster name is invalid: \(error)")
      }
      let key = try reader.array(32, "publicKey")
      var site: PeerSite?
      if carriesSites {
        let siteLength = Int(try reader.u8("site length"))
        let siteBytes = try reader.raw(siteLength, "site")
        guard let text = String(validating: siteBytes, as: UTF8.self), PeerSite.isValidName(text) else {
          throw reader.malformed("a roster site is not 0-63 bytes of UTF-8 without control characters")
        }
        let presence = try reader.u8("presence")
        site = PeerSite(name: text, isOnline: presence & 1 == 0)
      }
      entries.append(Frame.Roster.Entry(peer: Peer(id: id, name: name), hops: hops, publicKey: key, site: site))
    }
    return Frame.Roster(kind: kind, entries: entries, carriesSites: carriesSites)
  }
}
