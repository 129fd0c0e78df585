import NearbyCore
import NearbyCrypto

/// How our connections authenticate us (PROTOCOL.md, version 2): our long-term key and the
/// payload our handshake carries (our HELLO), the same for every connection of a session.
package struct ConnectionSecurity: Sendable {
  package let identity: IdentityKeyPair
  /// Sent encrypted inside the handshake: the encoded HELLO frame.
  package let payload: [UInt8]
  /// The record ciphers we announce (ChaCha20-Poly1305 always).
  package let ciphers: CipherSet

  package init(identity: IdentityKeyPair, payload: [UInt8], ciphers: CipherSet = .locallySupported) {
    self.identity = identity
    self.payload = payload
    self.ciphers = ciphers
  }

  /// A fresh identity with `payload` (tests and benchmarks of the transport alone).
  package static func ephemeral(payload: [UInt8] = []) -> ConnectionSecurity {
    var random = SystemCryptoRandom()
    return ConnectionSecurity(identity: .generate(using: &random), payload: payload)
  }
}

/// Why the secure layer gave up on a connection.
package struct SecurityFailure: Hashable, Sendable, CustomStringConvertible {
  /// What happened, for people: names the cause.
  package let description: String
  /// An ERROR the owner sends through the connection (sealed, in our direction, which still
  /// works) before closing; `nil` when the transport already answered (the handshake's
  /// plaintext ERROR) or there is nobody to tell.
  package let answer: ErrorCode?

  package init(_ description: String, answer: ErrorCode? = nil) {
    self.description = description
    self.answer = answer
  }
}

/// The secure layer of one connection: the handshake, then the records, as a value the
/// connection drives on its loop thread. No I/O: bytes in, bytes to send and outcomes out.
struct SecureChannel {
  enum Step {
    /// Keep going; write `send` (handshake bytes) first.
    case progress(send: [UInt8])
    /// The handshake is done: write `send`, tell the owner who the peer is, then feed
    /// `remaining` (the start of the peer's records) to ``opener``.
    case completed(send: [UInt8], peer: AuthenticatedPeer, remaining: [UInt8])
    /// The handshake failed: write `send` (an ERROR, or nothing), then close.
    case failed(send: [UInt8], SecurityFailure)
  }

  private var handshake: Handshake?
  private(set) var sealer: RecordSealer?
  private(set) var opener: RecordOpener?
  private(set) var failed = false

  init(security: ConnectionSecurity, role: Handshake.Role) {
    var random = SystemCryptoRandom()
    handshake = Handshake(role: role, identity: security.identity, payload: security.payload, ciphers: security.ciphers, random: &random)
  }

  var isEstablished: Bool { sealer != nil }

  /// The initiator's first message (empty for a responder).
  mutating func start() -> [UInt8] { handshake?.start().send ?? [] }

  /// Bytes from the peer before the handshake completed.
  mutating func receiveHandshake(_ bytes: some Collection<UInt8>) -> Step {
    guard handshake != nil else { return .progress(send: []) }
    let output = handshake!.receive(bytes)
    return step(output)
  }

  /// We give up on the handshake (we refused the connection): nothing more is read or sent
  /// through it.
  mutating func abandon() {
    guard handshake != nil else { return }
    handshake = nil
    failed = true
  }

  /// Nothing more is read from the peer (the connection is closing): the opener and its
  /// buffer (up to a record and more) go now rather than when the connection is gone.
  mutating func dropOpener() { opener = nil }

  /// The connection ended before the handshake completed.
  mutating func connectionClosed() -> SecurityFailure? {
    guard let output = handshake?.connectionClosed(), let error = output.error else { return nil }
    failed = true
    handshake = nil
    return SecurityFailure("the handshake did not complete: \(error)")
  }

  private mutating func step(_ output: Handshake.Output) -> Step {
    if let error = output.error {
      failed = true
      handshake = nil
      return .failed(send: output.send, SecurityFailure(Self.describe(error)))
    }
    guard let result = output.result else { return .progress(send: output.send) }
    handshake = nil
    sealer = result.makeSealer()
    opener = result.makeOpener()
    let peer = AuthenticatedPeer(
      publicKey: result.remotePublicKey.bytes, peerID: result.remotePeerID, payload: result.remotePayload,
      verificationCode: result.verificationCode.digits)
    return .completed(send: output.send, peer: peer, remaining: output.remainingBytes)
  }

  private static func describe(_ error: HandshakeError) -> String {
    switch error {
    case .peerSpeaksVersion1, .noCommonVersion, .remoteError: "\(error)"
    default: "authentication failed (\(error.name)): \(error)"
    }
  }

  /// What a record error means for the owner: what to say and which ERROR to send.
  static func failure(_ error: RecordError) -> SecurityFailure {
    switch error {
    case .peerAborted(let code, let message):
      SecurityFailure("the peer refused the handshake with ERROR \(code): \(message) (unauthenticated)")
    case .truncated:
      SecurityFailure("\(error)")
    default:
      SecurityFailure("\(error)", answer: error.errorCode)
    }
  }
}
