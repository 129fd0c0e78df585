extension Frame {
  /// RESUME (PROTOCOL.md 4.13, 6.5): a session continues on a new connection after its
  /// connection was lost. The connector sends it instead of INVITE; the listener answers
  /// with its own RESUME (or DECLINE `unknownSession`). Each side says what it already has
  /// of the other's messages, so that the other resends exactly what is missing.
  package struct Resume: Hashable, Sendable {
    /// The invitation id of the INVITE that began the session.
    package var session: UInt64
    /// The last message id the sender received from the receiver in this session (`nil`:
    /// none yet). Every message the receiver sent after it is resent.
    package var received: UInt64?
    /// The last of those messages that the sender's application took (`nil`: none yet):
    /// it and every message before it count as delivered, also when the DELIVERED that said
    /// so was lost with the old connection.
    package var delivered: UInt64?

    package init(session: UInt64, received: UInt64?, delivered: UInt64?) {
      self.session = session
      self.received = received
      self.delivered = delivered
    }
  }
}

extension FrameEncoder {
  /// RESUME's payload: `sessionID u64, flags u8, received u64, delivered u64` (absent
  /// values are sent as 0 with their flag clear).
  static func appendResumeFields(_ resume: Frame.Resume, into buffer: inout [UInt8]) {
    buffer.appendBigEndian(resume.session)
    let flags: UInt8 = (resume.received == nil ? 0 : 1) | (resume.delivered == nil ? 0 : 2)
    buffer.append(flags)
    buffer.appendBigEndian(resume.received ?? 0)
    buffer.appendBigEndian(resume.delivered ?? 0)
  }
}

extension FrameDecoder {
  static func decodeResume(_ reader: inout ByteReader) throws(FrameDecodingError) -> Frame.Resume {
    let session = try reader.integer(UInt64.self, "sessionID")
    let flags = try reader.u8("flags")
    let received = try reader.integer(UInt64.self, "received")
    let delivered = try reader.integer(UInt64.self, "delivered")
    guard flags & ~3 == 0 else { throw reader.malformed("flags 0x\(String(flags, radix: 16)) has bits other than 0 and 1") }
    guard flags & 1 != 0 || received == 0 else { throw reader.malformed("received is \(received) but its flag is clear") }
    guard flags & 2 != 0 || delivered == 0 else { throw reader.malformed("delivered is \(delivered) but its flag is clear") }
    guard flags & 2 == 0 || flags & 1 != 0 else { throw reader.malformed("delivered is set without received") }
    return Frame.Resume(session: session, received: flags & 1 != 0 ? received : nil, delivered: flags & 2 != 0 ? delivered : nil)
  }
}
