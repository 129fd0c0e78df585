import NearbyCore

/// Why a handshake failed. Every case is fatal for the connection; ``reply`` says which
/// ERROR frame (if any) goes to the peer before closing.
package enum HandshakeError: Error, Hashable, Sendable, CustomStringConvertible {
  /// How we know the peer only speaks protocol version 1.
  package enum Version1Evidence: Hashable, Sendable {
    /// It sent a v1 HELLO.
    case hello
    /// It answered our HANDSHAKE frame with ERROR `unknownFrameType` (v1 behaviour).
    case unknownFrameType(message: String)
  }

  /// The peer speaks protocol version 1 (plaintext) only.
  case peerSpeaksVersion1(Version1Evidence)
  /// No version both sides speak: the peer offers `peerMinimum...peerMaximum`.
  case noCommonVersion(peerMinimum: UInt8, peerMaximum: UInt8)
  /// The peer did not announce ChaCha20-Poly1305, which every peer must.
  case noCommonCipher(peer: CipherSet)
  /// The peer sent ERROR (before the handshake was complete).
  case remoteError(code: ErrorCode, message: String)
  /// A frame of a type that is not legal during the handshake (neither HANDSHAKE nor ERROR).
  case unexpectedFrame(type: UInt8, expectedStep: UInt8)
  /// A handshake message out of order: replayed, reordered or sent by the wrong side.
  case unexpectedMessage(step: UInt8, expectedStep: UInt8)
  /// A message whose bytes do not have the layout of its step.
  case malformedMessage(step: UInt8, reason: String)
  /// A frame longer than ``SecureProtocol/maximumHandshakeFrameLength`` (or of length 0);
  /// rejected from its length prefix alone.
  case frameTooLarge(length: UInt32)
  /// Message 3's ephemeral key is not the one message 1 committed to.
  case commitmentMismatch
  /// The peer's ephemeral key gives an all-zero shared secret (a low-order point).
  case invalidEphemeralKey
  /// The encrypted identity of message `step` does not decrypt: it was altered, or the two
  /// sides do not share a key (someone in the middle changed an earlier message).
  case decryptFailed(step: UInt8)
  /// The signature in message `step` does not verify with the key it came with.
  case invalidSignature(step: UInt8)
  /// The initiator expected `expected` (from discovery) but the responder's key owns `actual`.
  case wrongPeer(expected: PeerID, actual: PeerID)
  /// The peer presented our own public key: we connected to ourselves.
  case connectedToSelf
  /// The connection ended (EOF) while waiting for message `expectedStep`.
  case connectionClosed(expectedStep: UInt8)

  /// The case's name, as in the specification and the vectors (`decryptFailed`, ...).
  package var name: String {
    switch self {
    case .peerSpeaksVersion1: "peerSpeaksVersion1"
    case .noCommonVersion: "noCommonVersion"
    case .noCommonCipher: "noCommonCipher"
    case .remoteError: "remoteError"
    case .unexpectedFrame: "unexpectedFrame"
    case .unexpectedMessage: "unexpectedMessage"
    case .malformedMessage: "malformedMessage"
    case .frameTooLarge: "frameTooLarge"
    case .commitmentMismatch: "commitmentMismatch"
    case .invalidEphemeralKey: "invalidEphemeralKey"
    case .decryptFailed: "decryptFailed"
    case .invalidSignature: "invalidSignature"
    case .wrongPeer: "wrongPeer"
    case .connectedToSelf: "connectedToSelf"
    case .connectionClosed: "connectionClosed"
    }
  }

  /// The ERROR frame to send before closing (code and message), or `nil` when the peer is
  /// gone or already told us why (it sent ERROR or closed).
  package var reply: (code: ErrorCode, message: String)? {
    switch self {
    case .peerSpeaksVersion1(.hello):
      return (.unsupportedVersion, "this peer speaks Nearby protocol version 2 (encrypted sessions) only; upgrade Nearby to connect to it")
    case .peerSpeaksVersion1(.unknownFrameType), .remoteError, .connectionClosed:
      return nil
    case .noCommonVersion, .wrongPeer, .connectedToSelf, .unexpectedFrame, .unexpectedMessage, .malformedMessage, .frameTooLarge:
      return (replyCode, description)
    case .noCommonCipher, .commitmentMismatch, .invalidEphemeralKey, .decryptFailed, .invalidSignature:
      return (.handshakeFailed, description)
    }
  }

  private var replyCode: ErrorCode {
    switch self {
    case .noCommonVersion: .unsupportedVersion
    case .wrongPeer, .connectedToSelf: .wrongPeer
    case .unexpectedFrame, .unexpectedMessage: .unexpectedFrame
    case .frameTooLarge: .frameTooLarge
    default: .malformedFrame
    }
  }

  package var description: String {
    switch self {
    case .peerSpeaksVersion1(.hello):
      return "the peer speaks Nearby protocol version 1 (it sent a plaintext HELLO); it must upgrade to version 2 to connect"
    case .peerSpeaksVersion1(.unknownFrameType(let message)):
      return "the peer speaks Nearby protocol version 1 (it did not understand the handshake: \(message)); it must upgrade to version 2 to connect"
    case .noCommonVersion(let minimum, let maximum):
      return "no common protocol version: the peer speaks \(minimum)...\(maximum), this peer speaks \(SecureProtocol.version); upgrade the older one"
    case .noCommonCipher(let peer):
      return
        "the peer did not announce ChaCha20-Poly1305 (cipher bits 0x\(String(peer.rawValue, radix: 16))), which every version 2 peer must support; it is not a conforming implementation"
    case .remoteError(let code, let message):
      return "the peer ended the handshake with ERROR \(code): \(message)"
    case .unexpectedFrame(let type, let step):
      return
        "a frame of type 0x\(String(type, radix: 16)) arrived during the handshake (waiting for message \(step)); only HANDSHAKE and ERROR are legal before it completes"
    case .unexpectedMessage(let step, let expected):
      return
        "handshake message \(step) arrived while waiting for message \(expected): a replayed or reordered message, or a peer that does not follow the protocol"
    case .malformedMessage(let step, let reason):
      return "handshake message \(step) is malformed: \(reason)"
    case .frameTooLarge(let length):
      return "a frame of \(length) bytes arrived during the handshake (the limit is \(SecureProtocol.maximumHandshakeFrameLength), and 0 is invalid)"
    case .commitmentMismatch:
      return "the initiator's ephemeral key does not match its commitment in message 1: the handshake was tampered with"
    case .invalidEphemeralKey:
      return "the peer's ephemeral key is a low-order point (all-zero shared secret): the handshake was tampered with"
    case .decryptFailed(let step):
      return "handshake message \(step) does not decrypt: it was altered in transit, or someone in the middle changed an earlier message"
    case .invalidSignature(let step):
      return "the signature in handshake message \(step) is invalid: the peer does not hold the key it presented"
    case .wrongPeer(let expected, let actual):
      return
        "the peer's key belongs to \(actual.hex), not to \(expected.hex) that was expected: another peer answered at that address (or someone is impersonating it)"
    case .connectedToSelf:
      return "the peer presented this peer's own key: the connection reached ourselves"
    case .connectionClosed(let step):
      return "the connection closed during the handshake (waiting for message \(step)); the peer may have rejected it or crashed"
    }
  }
}
