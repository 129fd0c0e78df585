/// Encodes frames by appending their bytes to a caller-owned buffer, so a connection can
/// keep one buffer and reuse its capacity for every frame it writes.
///
/// The encoder does not validate protocol limits (the session does that where the user's
/// input enters); it only traps when a value cannot be represented in its field at all.
package enum FrameEncoder {
  /// Appends `frame`, length prefix included, to `buffer`.
  package static func encode(_ frame: Frame, into buffer: inout [UInt8]) {
    // Most frames are small: room for one in one allocation, not one per doubling from empty.
    buffer.reserveRoom(128)
    let start = buffer.count
    buffer.appendBigEndian(UInt32(0))
    buffer.append(frame.type.rawValue)
    switch frame {
    case .hello(let hello):
      buffer.append(contentsOf: ProtocolLimits.helloMagic)
      buffer.append(hello.minVersion)
      buffer.append(hello.maxVersion)
      buffer.appendBigEndian(hello.capabilities.rawValue)
      buffer.append(hello.peer.id)
      buffer.appendString8(hello.peer.name.value)
    case .invite(let invite):
      buffer.appendBigEndian(invite.invitationID)
      buffer.appendBigEndian(invite.timeoutMilliseconds)
      precondition(invite.context.count <= ProtocolLimits.maximumContextLength, "context too long")
      buffer.appendBigEndian(UInt16(invite.context.count))
      buffer.append(contentsOf: invite.context)
    case .accept(let id):
      buffer.appendBigEndian(id)
    case .decline(let id, let reason):
      buffer.appendBigEndian(id)
      buffer.append(reason.rawValue)
    case .message(let message):
      buffer.reserveRoom(encodedSize(ofMessageWithRecipients: message.recipients.count, bodyLength: message.body.count) - 5)
      appendMessageFields(message, into: &buffer)
    case .delivered(let delivered):
      buffer.append(delivered.origin)
      buffer.append(delivered.recipient)
      precondition(delivered.ids.count <= Int(UInt16.max), "too many ids")
      buffer.appendBigEndian(UInt16(delivered.ids.count))
      for id in delivered.ids { buffer.appendBigEndian(id) }
      if let signature = delivered.signature {
        precondition(signature.count == 64, "a receipt signature is 64 bytes")
        buffer.append(contentsOf: signature)
      }
    case .ping(let nonce), .pong(let nonce):
      buffer.appendBigEndian(nonce)
    case .goodbye(let reason):
      buffer.append(reason.rawValue)
    case .error(let code, let message):
      buffer.appendBigEndian(code.rawValue)
      let bytes = Array(message.utf8)
      precondition(bytes.count <= Int(UInt16.max), "error message too long")
      buffer.appendBigEndian(UInt16(bytes.count))
      buffer.append(contentsOf: bytes)
    case .roster(let roster):
      buffer.append(roster.kind.rawValue | (roster.carriesSites ? RosterKind.sitesBit : 0))
      precondition(roster.entries.count <= Int(UInt16.max), "too many roster entries")
      buffer.appendBigEndian(UInt16(roster.entries.count))
      for entry in roster.entries {
        buffer.append(entry.peer.id)
        buffer.append(entry.hops)
        buffer.appendString8(entry.peer.name.value)
        precondition(entry.publicKey.count == 32, "a roster key is 32 bytes")
        buffer.append(contentsOf: entry.publicKey)
        if roster.carriesSites {
          let site = entry.site ?? PeerSite(name: "", isOnline: true)
          buffer.appendString8(site.name)
          buffer.append(site.isOnline ? 0 : 1)
        }
      }
    case .undeliverable(let report):
      buffer.append(report.origin)
      buffer.appendBigEndian(report.messageID)
      buffer.append(report.recipient)
      buffer.append(report.reason.rawValue)
    case .verify:
      break
    case .resume(let resume):
      appendResumeFields(resume, into: &buffer)
    case .file(let transfer):
      appendTransferFields(transfer, into: &buffer)
    }
    let length = buffer.count - start - 4
    precondition(length <= Int(UInt32.max), "frame too long")
    buffer.withUnsafeMutableBytes { raw in
      raw.storeBytes(of: UInt32(length).bigEndian, toByteOffset: start, as: UInt32.self)
    }
  }

  /// The frame's bytes in a new array.
  package static func encode(_ frame: Frame) -> [UInt8] {
    var buffer = [UInt8]()
    encode(frame, into: &buffer)
    return buffer
  }

  /// The encoded size of a MESSAGE, length prefix included.
  package static func encodedSize(ofMessageWithRecipients recipients: Int, bodyLength: Int) -> Int {
    4 + 1 + 8 + 16 + 8 + 1 + 2 + 16 * recipients + 4 + bodyLength
  }

  /// Appends a MESSAGE frame without going through ``Frame`` (the hot path of sending).
  package static func encodeMessage(_ message: Frame.Message, into buffer: inout [UInt8]) {
    let length = encodedSize(ofMessageWithRecipients: message.recipients.count, bodyLength: message.body.count) - 4
    buffer.reserveRoom(4 + length)
    buffer.appendBigEndian(UInt32(length))
    buffer.append(FrameType.message.rawValue)
    appendMessageFields(message, into: &buffer)
  }

  /// The fields after the type byte. The fixed part is stored into a temporary buffer and
  /// appended at once (appending the fields one by one cost about a hundred instructions
  /// each, eight or more per message, on the hot path of sending).
  private static func appendMessageFields(_ message: Frame.Message, into buffer: inout [UInt8]) {
    precondition(message.recipients.count <= Int(UInt16.max), "too many recipients")
    precondition(message.body.count <= Int(UInt32.max), "body too long")
    let fixed = 8 + 16 + 8 + 1 + 2 + 16 * message.recipients.count + 4
    withUnsafeTemporaryAllocation(byteCount: fixed, alignment: 8) { raw in
      var offset = 0
      func store<T: FixedWidthInteger>(_ value: T) {
        raw.storeBytes(of: value.bigEndian, toByteOffset: offset, as: T.self)
        offset += MemoryLayout<T>.size
      }
      store(message.id)
      store(message.sender.high)
      store(message.sender.low)
      store(message.timestamp)
      store(message.hopLimit)
      store(UInt16(message.recipients.count))
      for recipient in message.recipients {
        store(recipient.high)
        store(recipient.low)
      }
      store(UInt32(message.body.count))
      buffer.append(contentsOf: UnsafeRawBufferPointer(raw))
    }
    buffer.append(contentsOf: message.body)
  }
}

extension [UInt8] {
  /// Makes room for `count` more bytes at once. Not a plain `reserveCapacity(count + n)`:
  /// on an Array that grows to exactly the amount asked, so calling it for every frame
  /// appended to a long buffer would copy the buffer each time; this grows by doubling.
  /// (Without it, a frame appended to an empty buffer reallocated it six times or more.)
  @inlinable
  mutating func reserveRoom(_ count: Int) {
    let needed = self.count + count
    if needed > capacity { reserveCapacity(Swift.max(needed, capacity * 2)) }
  }

  @inlinable
  mutating func appendBigEndian<T: FixedWidthInteger>(_ value: T) {
    Swift.withUnsafeBytes(of: value.bigEndian) { append(contentsOf: $0) }
  }

  @inlinable
  mutating func append(_ id: PeerID) {
    appendBigEndian(id.high)
    appendBigEndian(id.low)
  }

  mutating func appendString8(_ text: String) {
    let bytes = text.utf8
    precondition(bytes.count <= 255, "string too long for str8")
    append(UInt8(bytes.count))
    append(contentsOf: bytes)
  }
}
