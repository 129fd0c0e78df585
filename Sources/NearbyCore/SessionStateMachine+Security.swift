/// What the secure layer (PROTOCOL.md, version 2) tells the session: a connection's peer is
/// authenticated, or the connection cannot be trusted any more.
extension SessionStateMachine {
  /// The handshake of connection `id` authenticated its peer. The HELLO it carried is read
  /// as the connection's first frame, after checking that it names the peer the key owns:
  /// an id is never taken from what a peer says, only from its key.
  package mutating func authenticated(_ id: ConnectionID, _ peer: AuthenticatedPeer, now: Duration, into actions: inout [SessionAction]) {
    guard connections[id]?.machine != nil else { return }
    let hello: Frame.Hello
    switch Self.decodeHello(peer.payload) {
    case .success(let decoded):
      hello = decoded
    case .failure(let reason):
      reject(id, .invalidHello, "the HELLO in the handshake \(reason)", now: now, into: &actions)
      return
    }
    guard hello.peer.id == peer.peerID else {
      reject(
        id, .wrongPeer, "the HELLO in the handshake names peer \(hello.peer.id.hex), but the peer's key owns \(peer.peerID.hex)", now: now,
        into: &actions)
      return
    }
    connections[id]!.authenticated = peer
    received([.hello(hello)], on: id, now: now, into: &actions)
  }

  /// The secure layer gave up on connection `id`.
  /// - Parameters:
  ///   - detail: what happened, naming the cause.
  ///   - answer: the ERROR code to send first (sealed), or `nil` when nothing is to be sent.
  package mutating func securityFailed(_ id: ConnectionID, detail: String, answer: ErrorCode?, now: Duration, into actions: inout [SessionAction]) {
    guard let machine = connections[id]?.machine else { return }
    let peer = connectionPeer(id)
    // The event names the peer when we know whom we dialled or who it claimed to be.
    let named = peer.map { "\($0): \(detail)" } ?? detail
    if machine.state == .awaitingHello {
      actions.append(.emit(.error(.authenticationFailed(peer: peer, detail: detail))))
    }
    let transition = connections[id]!.machine!.securityFailed(named, answer: answer, now: now)
    perform(transition, on: id, now: now, into: &actions)
  }

  /// The person wants to compare codes with `peer`: the code is reported here
  /// (``SessionEvent/verification(_:code:askedByPeer:)``) and the peer is asked to show it too.
  package mutating func requestVerification(_ peerID: PeerID, into actions: inout [SessionAction]) {
    guard let session = peers[peerID]?.session, let peer = peers[peerID]?.peer,
      let code = connections[session]?.authenticated?.verificationCode
    else {
      let name = peers[peerID]?.peer.description ?? peerID.hex
      actions.append(.emit(.error(.rejected("not connected to \(name) directly: codes are compared on a direct session"))))
      return
    }
    actions.append(.send(session, .verify))
    actions.append(.emit(.verification(peer, code: code, askedByPeer: false)))
  }

  /// The person compared the code (or took it back): the peer counts as verified.
  package mutating func setVerified(_ peerID: PeerID, _ verified: Bool) {
    if verified { configuration.verifiedPeers.insert(peerID) } else { configuration.verifiedPeers.remove(peerID) }
  }

  /// The verification code of the session with `peer`, while it is connected directly.
  package func verificationCode(of peer: PeerID) -> String? {
    guard let session = peers[peer]?.session else { return nil }
    return connections[session]?.authenticated?.verificationCode
  }

  /// The public key a handshake proved for `peer`, if any.
  package func publicKey(of peer: PeerID) -> [UInt8]? { peers[peer]?.publicKey }

  private mutating func reject(_ id: ConnectionID, _ code: ErrorCode, _ reason: String, now: Duration, into actions: inout [SessionAction]) {
    actions.append(.emit(.error(.authenticationFailed(peer: connectionPeer(id), detail: reason))))
    let transition = connections[id]!.machine!.reject(code, reason, now: now)
    perform(transition, on: id, now: now, into: &actions)
  }

  /// The one HELLO frame of a handshake payload.
  static func decodeHello(_ payload: [UInt8]) -> Result<Frame.Hello, HelloPayloadError> {
    let decoder = FrameDecoder()
    decoder.append(payload)
    let frame: Frame?
    do {
      frame = try decoder.next()
    } catch {
      return .failure(HelloPayloadError("is not a valid frame: \(error)"))
    }
    guard case .hello(let hello)? = frame else { return .failure(HelloPayloadError("is missing (the payload holds no HELLO frame)")) }
    guard decoder.bufferedByteCount == 0 else {
      return .failure(HelloPayloadError("is followed by \(decoder.bufferedByteCount) more bytes"))
    }
    return .success(hello)
  }
}

struct HelloPayloadError: Error, CustomStringConvertible {
  let description: String
  init(_ description: String) { self.description = description }
}
