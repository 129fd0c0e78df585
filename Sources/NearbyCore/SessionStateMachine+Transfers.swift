/// File transfers (PROTOCOL.md section 13) as far as the session is concerned: which way a
/// FILE frame goes to a peer (direct on its session, or sealed end to end through a relay),
/// and FILE frames that arrive either way. The transfers themselves are the shell's.
extension SessionStateMachine {
  /// How FILE frames reach a peer now.
  package enum TransferRoute: Hashable, Sendable {
    /// On the session with the peer, as FILE frames.
    case direct(ConnectionID)
    /// Through a relay, each FILE frame sealed for the peer in a MESSAGE.
    case relayed(ConnectionID)

    package var connection: ConnectionID {
      switch self {
      case .direct(let id), .relayed(let id): id
      }
    }
  }

  /// The route FILE frames to `peer` take now, or why there is none.
  package func transferRoute(to peer: PeerID) -> Result<TransferRoute, TransferRouteError> {
    guard peer != localPeer.id else { return .failure(.notReachable("that is us")) }
    guard let record = peers[peer] else { return .failure(.notReachable("no peer \(peer.shortHex) is known")) }
    if let session = record.session {
      guard !record.isRelay else { return .failure(.notSupported("\(record.peer) is a relay: it does not take files")) }
      let capabilities = connection(session, { $0.machine?.remoteHello?.capabilities }) ?? nil
      guard capabilities?.contains(.files) == true else {
        return .failure(.notSupported("\(record.peer) runs a Nearby without file transfers: it must upgrade"))
      }
      return .success(.direct(session))
    }
    if let route = record.bestRoute, record.publicKey != nil { return .success(.relayed(route)) }
    return .failure(.notReachable("\(record.peer) is not connected"))
  }

  /// A FILE frame (`frame`: its type byte and payload) sealed for `peer` behind the relay of
  /// `route`, as the MESSAGE to queue there. Its id comes from our message ids; it is not a
  /// message of ours (no receipt is expected: the transfer acknowledges its own frames).
  package mutating func sealTransfer(_ frame: [UInt8], to peer: PeerID, timestamp: UInt64, now: Duration) -> Result<Frame.Message, TransferRouteError>
  {
    guard let key = peers[peer]?.publicKey else { return .failure(.notReachable("no key is known for \(peer.shortHex)")) }
    let messageID = nextMessageID
    nextMessageID &+= 1
    let header = EnvelopeHeader(origin: localPeer.id, messageID: messageID, timestamp: timestamp, recipients: [peer])
    switch configuration.endToEnd.sealTransfer(frame, header: header, recipientKeys: [key]) {
    case .success(let envelope):
      return .success(Frame.Message(id: messageID, sender: localPeer.id, timestamp: timestamp, recipients: [peer], body: envelope))
    case .failure(let error):
      return .failure(.notReachable("the file data could not be sealed for \(peer.shortHex): \(error)"))
    }
  }

  /// We queued something on a connection that the machine did not produce (no needless PING).
  package mutating func noteSent(on id: ConnectionID, now: Duration) {
    updateConnection(id) { $0.machine?.noteSent(now: now) }
  }

  /// A FILE frame on a session: from the connection's peer.
  mutating func transferFrameReceived(_ frame: TransferFrame, on id: ConnectionID, into actions: inout [SessionAction]) {
    guard let peer = connection(id, { $0.peerID }) ?? nil, peers[peer]?.session == id else { return }
    actions.append(.transferFrame(frame, from: peer, via: id))
  }

  /// An opened envelope whose body is a FILE frame: from the envelope's origin, whose
  /// signature has been checked. A body that is not a FILE frame is the origin's fault.
  mutating func transferEnvelopeOpened(_ body: [UInt8], from origin: PeerID, via id: ConnectionID, into actions: inout [SessionAction]) {
    let decoded: Frame?
    do {
      decoded = try body.withUnsafeBytes { raw throws(FrameDecodingError) -> Frame? in
        raw.isEmpty ? nil : try FrameDecoder.decodeBody(raw)
      }
    } catch {
      decoded = nil
    }
    guard case .file(let frame)? = decoded else {
      actions.append(
        .emit(.error(.protocolError(peer: peers[origin]?.peer, detail: "a sealed file-transfer frame from \(origin.shortHex) is not a FILE frame"))))
      return
    }
    actions.append(.transferFrame(frame, from: origin, via: id))
  }
}

/// Why FILE frames cannot go to a peer.
package enum TransferRouteError: Error, Hashable, Sendable, CustomStringConvertible {
  /// No session and no relay route (or no key for it).
  case notReachable(String)
  /// Its session's HELLO does not announce file transfers.
  case notSupported(String)

  package var description: String {
    switch self {
    case .notReachable(let detail), .notSupported(let detail): detail
    }
  }
}

extension EndToEndCrypto {
  /// Implementations that cannot seal file transfers (test stand-ins) refuse them.
  package func sealTransfer(_ frame: [UInt8], header: EnvelopeHeader, recipientKeys: [[UInt8]]) -> Result<[UInt8], EndToEndError> {
    .failure(EndToEndError("unavailable", "this session cannot seal file transfers"))
  }
}
