/// What a federated relay's state machine asks the federation (NATS, in the relay's shell)
/// to do (PROTOCOL.md 9.6). Everything that crosses the federation is a frame exactly as it
/// travels between peers: sealed messages, signed receipts, reports.
package enum FederationOutput: Hashable, Sendable {
  /// Store and pass on a sealed message for one recipient behind the federation: it goes on
  /// the recipient's subject, and the relay where the recipient connects delivers it (now,
  /// or when it comes back, within the age limit). `online`: presence showed it connected.
  case publish(Frame.Message, recipient: PeerID, online: Bool)
  /// A DELIVERED or UNDELIVERABLE for an origin behind the federation (and online).
  case report(Frame, origin: PeerID)
  /// A peer connected to this relay acknowledged messages of `origin`: those of them that
  /// came from the federation are done (their stored copies can go).
  case receipted(recipient: PeerID, origin: PeerID, ids: [UInt64])
  /// A peer (not a relay) began a session with this relay: announce it, and deliver what
  /// waits for it.
  case arrived(Peer, publicKey: [UInt8])
  /// That session ended.
  case departed(PeerID)
}

/// What became of a frame the federation handed to ``SessionStateMachine/federationReceived(_:for:into:)``.
package enum FederationDelivery: Hashable, Sendable {
  /// On its way to the recipient's session (a message is done once its receipt passes).
  case handedOn
  /// The recipient has no session with this relay (any more): leave it for its next relay.
  case notHere
  /// No key is known for the message's origin yet: try again later.
  case unknownOrigin
  /// It fails its checks (a forged or damaged message, a frame that does not belong there):
  /// drop it for good.
  case rejected(String)
}
