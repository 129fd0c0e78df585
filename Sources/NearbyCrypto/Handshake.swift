import NearbyCore

/// The version 2 handshake of one connection as a plain value: bytes from the peer in (in
/// chunks of any size), bytes to send and the outcome out. It does no I/O and reads no
/// clock; its only randomness is the ephemeral key pair it is given.
///
/// Four messages (PROTOCOL.md sections 3.4–3.6): (1) the initiator commits to its ephemeral key and
/// announces its ciphers; (2) the responder sends its ephemeral key and ciphers; (3) the
/// initiator reveals its ephemeral key and sends its identity, encrypted under keys from the
/// X25519 exchange and signed over the transcript; (4) the responder sends its identity the
/// same way. Both sides end with the peer's authenticated key, record keys for each
/// direction and a verification code. Time limits (the handshake timeout) are the owner's:
/// it calls ``connectionClosed()`` when it gives up.
///
/// ```swift
/// var handshake = Handshake(role: .initiator(expecting: id), identity: me, payload: info, random: &random)
/// write(handshake.start().send)
/// let output = handshake.receive(bytesFromSocket)   // repeat until result or error
/// write(output.send)                                // also an ERROR frame before closing
/// if let result = output.result { /* records: result.makeSealer(), result.makeOpener() */ }
/// ```
package struct Handshake: Sendable {
  /// Which side of the handshake we are: the initiator is the peer that opened the TCP
  /// connection.
  package enum Role: Hashable, Sendable {
    /// We opened the connection; `expecting` is the peer id we meant to reach (from
    /// discovery), or `nil` when we dialled an address without knowing who is there.
    case initiator(expecting: PeerID?)
    /// We accepted the connection.
    case responder
  }

  /// Where the handshake is.
  package enum State: Hashable, Sendable {
    /// An initiator before ``start()``.
    case ready
    /// Waiting for the message with this step number (1–4).
    case awaitingMessage(UInt8)
    case completed
    case failed(HandshakeError)
  }

  /// What one call produced.
  package struct Output: Sendable {
    /// Bytes to write to the peer, in order: handshake frames, or one ERROR frame before
    /// closing after a failure.
    package var send: [UInt8] = []
    /// Set once, when the handshake completes.
    package var result: HandshakeResult?
    /// Set once, when the handshake fails: write ``send``, then close.
    package var error: HandshakeError?
    /// With ``result``: bytes already received after the last handshake message. They are
    /// the start of the peer's record stream; feed them to the record opener first.
    package var remainingBytes: [UInt8] = []

    /// Nothing to do.
    package init() {}
  }

  /// Initiator or responder.
  package let role: Role
  /// Where the handshake is.
  package internal(set) var state: State
  /// The code to compare, known from message 2 on (initiator) or message 3 (responder).
  package internal(set) var verificationCode: VerificationCode?

  let identity: IdentityKeyPair
  let payload: [UInt8]
  let ciphers: CipherSet
  /// Released (and so wiped) once the shared secret is computed.
  var ephemeral: EphemeralKeyPair?
  var reader = HandshakeFrameReader()
  /// The running transcript hash `h`.
  var transcript = HandshakeKeySchedule.initialTranscript
  /// Responder: message 1's commitment, checked against message 3.
  var peerCommitment: [UInt8] = []
  var cipher: RecordCipher?
  /// Whether the peer's message 1 or 2 said it reads PADDED records.
  var peerReadsPaddedRecords = false
  var chainKey: SecretBytes?

  /// - Parameters:
  ///   - role: initiator (with the peer id it expects, if any) or responder.
  ///   - identity: our long-term key pair.
  ///   - payload: the application payload sent (encrypted) with our identity, at most
  ///     ``SecureProtocol/maximumPayloadLength`` bytes: display name, capability bits.
  ///   - ciphers: what we announce; must contain ChaCha20-Poly1305.
  ///   - ephemeral: a fresh key pair, never used for another handshake.
  package init(role: Role, identity: IdentityKeyPair, payload: [UInt8], ciphers: CipherSet = .locallySupported, ephemeral: EphemeralKeyPair) {
    precondition(payload.count <= SecureProtocol.maximumPayloadLength, "handshake payload of \(payload.count) bytes")
    precondition(ciphers.contains(.chacha20Poly1305), "ChaCha20-Poly1305 is mandatory")
    precondition(!ciphers.contains(.aes256GCM) || RecordCipher.aes256GCM.isAvailable, "AES-256-GCM is not available on this CPU")
    self.role = role
    self.identity = identity
    self.payload = payload
    self.ciphers = ciphers
    self.ephemeral = ephemeral
    state = role == .responder ? .awaitingMessage(1) : .ready
  }

  /// The same, with a fresh ephemeral key pair drawn from `random`.
  package init(role: Role, identity: IdentityKeyPair, payload: [UInt8], ciphers: CipherSet = .locallySupported, random: inout some CryptoRandom) {
    self.init(role: role, identity: identity, payload: payload, ciphers: ciphers, ephemeral: .generate(using: &random))
  }

  /// Whether we opened the connection.
  package var isInitiator: Bool { role != .responder }

  /// Starts the handshake: the initiator's message 1 (send it at once); nothing for a
  /// responder, which speaks when message 1 arrives.
  package mutating func start() -> Output {
    var output = Output()
    guard isInitiator else { return output }
    precondition(state == .ready, "start() called twice")
    let commit = HandshakeMessages.Commit(
      minimumVersion: SecureProtocol.version, maximumVersion: SecureProtocol.version, ciphers: ciphers,
      commitment: HandshakeKeySchedule.commitment(to: ephemeral!.publicKey)
    ).encoded()
    transcript = HandshakeKeySchedule.mix(transcript, commit)  // h1
    send(commit, into: &output)
    state = .awaitingMessage(2)
    return output
  }

  /// Takes bytes from the peer, in chunks of any size.
  ///
  /// After completion, bytes belong to the record layer: pass them to the record opener,
  /// not here. After a failure, further bytes are ignored.
  package mutating func receive(_ bytes: some Collection<UInt8>) -> Output {
    var output = Output()
    switch state {
    case .ready: preconditionFailure("receive(_:) before start()")
    case .completed: preconditionFailure("receive(_:) after the handshake completed: feed the RecordOpener")
    case .failed: return output
    case .awaitingMessage: break
    }
    reader.append(bytes)
    while case .awaitingMessage(let step) = state {
      do throws(HandshakeError) {
        guard let frame = try reader.next() else { break }
        try handle(type: frame.type, payload: frame.payload, expectedStep: step, into: &output)
      } catch {
        fail(error, into: &output)
      }
    }
    if state == .completed { output.remainingBytes = reader.takeRemaining() }
    return output
  }

  /// The connection ended (EOF or a socket error) before completion.
  package mutating func connectionClosed() -> Output {
    var output = Output()
    if case .awaitingMessage(let step) = state { fail(.connectionClosed(expectedStep: step), into: &output) }
    return output
  }

  private mutating func handle(type: UInt8, payload: [UInt8], expectedStep: UInt8, into output: inout Output) throws(HandshakeError) {
    switch type {
    case SecureFrameType.handshake.rawValue:
      guard let step = payload.first else { throw .malformedMessage(step: expectedStep, reason: "the HANDSHAKE frame is empty") }
      guard step == expectedStep else { throw .unexpectedMessage(step: step, expectedStep: expectedStep) }
      switch step {
      case 1: try receiveCommit(payload, into: &output)
      case 2: try receiveReply(payload, into: &output)
      case 3: try receiveReveal(payload, into: &output)
      default: try receiveConfirm(payload, into: &output)
      }
    case FrameType.error.rawValue:
      let frame = ([type] + payload).withUnsafeBytes { bytes in Result { () throws(FrameDecodingError) in try FrameDecoder.decodeBody(bytes) } }
      guard case .success(.error(let code, let message)) = frame else {
        throw .malformedMessage(step: expectedStep, reason: "the peer sent a malformed ERROR frame")
      }
      throw code == .unknownFrameType ? .peerSpeaksVersion1(.unknownFrameType(message: message)) : .remoteError(code: code, message: message)
    case FrameType.hello.rawValue:
      throw .peerSpeaksVersion1(.hello)
    default:
      throw .unexpectedFrame(type: type, expectedStep: expectedStep)
    }
  }

  /// Appends a HANDSHAKE frame carrying `message` to the output (the caller mixes it into
  /// the transcript: not every message is mixed at the moment it is sent).
  mutating func send(_ message: [UInt8], into output: inout Output) {
    output.send += HandshakeFrameReader.frame(type: SecureFrameType.handshake.rawValue, payload: message)
  }

  mutating func complete(_ result: HandshakeResult, into output: inout Output) {
    state = .completed
    ephemeral = nil
    chainKey = nil
    output.result = result
  }

  private mutating func fail(_ error: HandshakeError, into output: inout Output) {
    state = .failed(error)
    ephemeral = nil
    chainKey = nil
    output.error = error
    if let reply = error.reply {
      var message = reply.message
      while message.utf8.count > ProtocolLimits.maximumErrorMessageBytes { message.removeLast() }
      output.send += FrameEncoder.encode(.error(code: reply.code, message: message))
    }
  }
}
