/// Why bytes from a peer are not a valid frame. Every case is fatal for the connection.
package enum FrameDecodingError: Error, Hashable, Sendable, CustomStringConvertible {
  /// The length prefix is 0.
  case emptyFrame
  /// The length prefix is above the maximum; nothing was allocated for it.
  case frameTooLarge(length: UInt32)
  /// The type byte is not one this version defines.
  case unknownFrameType(UInt8)
  /// The payload does not match its type's layout or limits.
  case malformedFrame(FrameType, String)
  /// A HELLO with a bad magic, version range, peer id or name.
  case invalidHello(String)
  /// The stream ended inside a frame.
  case truncated(bufferedBytes: Int)

  /// The name used by the test vectors (`emptyFrame`, `frameTooLarge`, ...).
  package var name: String {
    switch self {
    case .emptyFrame: "emptyFrame"
    case .frameTooLarge: "frameTooLarge"
    case .unknownFrameType: "unknownFrameType"
    case .malformedFrame: "malformedFrame"
    case .invalidHello: "invalidHello"
    case .truncated: "truncated"
    }
  }

  /// The ERROR code to send to the peer before closing.
  package var errorCode: ErrorCode {
    switch self {
    case .emptyFrame, .malformedFrame, .truncated: .malformedFrame
    case .frameTooLarge: .frameTooLarge
    case .unknownFrameType: .unknownFrameType
    case .invalidHello: .invalidHello
    }
  }

  package var description: String {
    switch self {
    case .emptyFrame:
      return "a frame has length 0"
    case .frameTooLarge(let length):
      return "a frame announces \(length) bytes, more than the maximum of \(ProtocolLimits.maximumFrameLength)"
    case .unknownFrameType(let type):
      return "unknown frame type 0x\(String(type, radix: 16))"
    case .malformedFrame(let type, let reason):
      return "malformed \(type) frame: \(reason)"
    case .invalidHello(let reason):
      return "invalid HELLO: \(reason)"
    case .truncated(let count):
      return "the connection ended in the middle of a frame (\(count) bytes left over)"
    }
  }
}
