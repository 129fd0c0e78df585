import NearbyCore

/// Why the record stream from the peer cannot be read any further. Every case is fatal for
/// the connection; ``errorCode`` is the ERROR to send (sealed) before closing, if any.
package enum RecordError: Error, Hashable, Sendable, CustomStringConvertible {
  /// Record `sequence` did not authenticate: it was altered, replayed, reordered, dropped
  /// before, or sealed with another key.
  case decryptFailed(sequence: UInt64)
  /// A record announced `length` bytes, more than the maximum; nothing was allocated for it.
  case recordTooLarge(length: UInt32)
  /// A record that cannot be valid whatever its contents: a length below the tag size, an
  /// unknown type byte, a CLOSE with contents.
  case malformedRecord(String)
  /// The stream ended without a CLOSE record: it was cut (by the network or an attacker),
  /// or the peer crashed. `bufferedBytes` were left over.
  case truncated(bufferedBytes: Int)
  /// Bytes arrived after the peer's CLOSE record.
  case dataAfterClose(byteCount: Int)
  /// The peer sent a plaintext ERROR instead of its first record (it rejected the
  /// handshake's last message). Unauthenticated: anyone on the path could have sent it.
  case peerAborted(code: ErrorCode, message: String)

  /// The case's name, as in the specification and the vectors.
  package var name: String {
    switch self {
    case .decryptFailed: "decryptFailed"
    case .recordTooLarge: "recordTooLarge"
    case .malformedRecord: "malformedRecord"
    case .truncated: "truncated"
    case .dataAfterClose: "dataAfterClose"
    case .peerAborted: "peerAborted"
    }
  }

  /// The ERROR code to send to the peer before closing, or `nil` when nothing should be sent
  /// (the stream is gone, or the peer already gave up).
  package var errorCode: ErrorCode? {
    switch self {
    case .decryptFailed: .decryptFailed
    case .recordTooLarge: .frameTooLarge
    case .malformedRecord, .dataAfterClose: .malformedFrame
    case .truncated, .peerAborted: nil
    }
  }

  package var description: String {
    switch self {
    case .decryptFailed(let sequence):
      "record \(sequence) from the peer did not decrypt: it was altered, replayed, reordered or dropped on the way (or the keys differ); the connection is no longer trustworthy"
    case .recordTooLarge(let length):
      "a record announces \(length) bytes, more than the maximum of \(SecureProtocol.maximumRecordLength)"
    case .malformedRecord(let reason):
      "malformed record: \(reason)"
    case .truncated(let count):
      "the encrypted stream ended without a CLOSE record (\(count) bytes left over): it was cut off, or the peer crashed"
    case .dataAfterClose(let count):
      "\(count) bytes arrived after the peer's CLOSE record"
    case .peerAborted(let code, let message):
      "the peer rejected the handshake with ERROR \(code) (unauthenticated): \(message)"
    }
  }
}
