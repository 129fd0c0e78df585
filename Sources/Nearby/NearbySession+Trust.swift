import NearbyCore

/// Trust on first use and verification codes: every peer a session meets is remembered
/// with its key in the identity's known peers; a person who compared the six-digit code with
/// the peer's person marks it verified (``trust(_:)``), and ``AcceptPolicy/known`` then
/// accepts only such peers.
extension NearbySession {
  /// The verification code of our session with `peer` (while it is connected directly).
  public func verificationCode(for peer: PeerID) -> String? { machine.verificationCode(of: peer) }

  /// Shows the code of our session with `peer` here (the `verification` event)
  /// and asks the peer to show it to its person too, so both can compare.
  public func requestVerification(of peer: PeerID) {
    var actions: [SessionAction] = []
    machine.requestVerification(peer, into: &actions)
    perform(taking: &actions)
  }

  /// The person compared the code of our session with `peer` and it matched: the peer is
  /// remembered as verified (the `trusted` event).
  /// - Throws: ``TrustError`` when the peer is not connected directly (there is no code to
  ///   have compared) or the known-peers file cannot be written.
  public func trust(_ peer: PeerID) throws(TrustError) {
    guard machine.verificationCode(of: peer) != nil, let known = machine.peer(peer) else {
      throw .notConnected(machine.peer(peer)?.description ?? peer.hex)
    }
    do {
      if configuration.identity.knownPeer(peer) == nil, let key = machine.publicKey(of: peer) {
        try configuration.identity.record(known, publicKey: key, now: Self.unixMilliseconds() / 1000)
      }
      try configuration.identity.setVerified(peer, true)
    } catch {
      throw .notSaved(error.description)
    }
    machine.setVerified(peer, true)
    emit(.trusted(known))
  }

  /// The peers this identity has met, with whether they are verified.
  public nonisolated var knownPeers: [KnownPeer] { configuration.identity.knownPeers }

  /// A session started: remember the peer (trust on first use), and warn when it takes the
  /// name of a verified peer that it is not.
  func metPeer(_ peer: Peer) {
    guard let key = machine.publicKey(of: peer.id) else { return }
    let identity = configuration.identity
    if identity.knownPeer(peer.id) == nil {
      let lookalike = identity.knownPeers.first { $0.isVerified && $0.id != peer.id && $0.name.value.lowercased() == peer.name.value.lowercased() }
      if let lookalike { hub.publish(.session(.impostorWarning(peer, verified: lookalike.peer))) }
    }
    let hub = self.hub
    identity.recordLater(peer, publicKey: key, now: Self.unixMilliseconds() / 1000) { error in
      hub.publish(.session(.error(.rejected("could not remember \(peer) in the known peers: \(error)"))))
    }
  }
}

/// Why a peer could not be marked verified.
public enum TrustError: Error, Hashable, Sendable, CustomStringConvertible {
  case notConnected(String)
  case notSaved(String)

  public var description: String {
    switch self {
    case .notConnected(let peer):
      "not connected to \(peer) directly: a code is compared on a session, so connect first and compare the code it shows"
    case .notSaved(let reason): "the peer could not be marked verified: \(reason)"
    }
  }
}
