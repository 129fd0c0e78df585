/// Splits the plaintext byte stream of the handshake phase into v1-shaped frames
/// (`u32 length | u8 type | payload`), in chunks of any size. It checks each length against
/// ``SecureProtocol/maximumHandshakeFrameLength`` as soon as the four length bytes are there
/// (before buffering the frame) and hands back whatever follows the last frame it returned,
/// which after the handshake is the start of the record stream.
struct HandshakeFrameReader: Sendable {
  private var buffer: [UInt8] = []
  private var start = 0

  /// Bytes received and not yet returned as frames.
  var bufferedCount: Int { buffer.count - start }

  mutating func append(_ bytes: some Collection<UInt8>) {
    if start > 0, start == buffer.count {
      buffer.removeAll(keepingCapacity: true)
      start = 0
    }
    buffer.append(contentsOf: bytes)
  }

  /// The next complete frame, or `nil` when more bytes are needed.
  /// - Throws: ``HandshakeError/frameTooLarge(length:)`` for a length of 0 or above the limit.
  mutating func next() throws(HandshakeError) -> (type: UInt8, payload: [UInt8])? {
    guard bufferedCount >= 4 else { return nil }
    let length = buffer.bigEndian(at: start, as: UInt32.self)
    guard length >= 1, length <= UInt32(SecureProtocol.maximumHandshakeFrameLength) else { throw .frameTooLarge(length: length) }
    guard bufferedCount >= 4 + Int(length) else { return nil }
    let type = buffer[start + 4]
    let payload = Array(buffer[(start + 5)..<(start + 4 + Int(length))])
    start += 4 + Int(length)
    return (type, payload)
  }

  /// Takes the bytes after the last returned frame out of the reader.
  mutating func takeRemaining() -> [UInt8] {
    defer {
      buffer = []
      start = 0
    }
    return Array(buffer[start...])
  }

  /// A whole frame: the length prefix, the type byte and the payload.
  static func frame(type: UInt8, payload: [UInt8]) -> [UInt8] {
    var bytes = [UInt8]()
    bytes.reserveCapacity(5 + payload.count)
    bytes.append(bigEndian: UInt32(1 + payload.count))
    bytes.append(type)
    bytes += payload
    return bytes
  }
}
