import NearbyCore

/// Where a federated relay's session hands the work of the federation (NATS, in
/// `NearbyFederation`). Called on the session's I/O thread: it must not block, only take the
/// work (to a queue of its own).
package protocol FederationLink: Sendable {
  func handle(_ output: FederationOutput)
}

extension NearbySession {
  /// Attaches the federation of a relay started with ``SessionConfiguration/federation``:
  /// the session hands it what crosses sites, and it feeds back through
  /// ``federationInput(_:then:)``. Call it before ``run()``.
  package func attachFederation(_ link: any FederationLink) {
    federationLink = link
  }

  /// Runs an input of the federation on the session's I/O thread with its state machine,
  /// performs the actions, then gives `body`'s result to `then` (still on that thread; it
  /// must not block). Callable from any thread, NATS's included: nothing waits for the loop.
  package nonisolated func federationInput<R: Sendable>(
    _ body: @escaping @Sendable (inout SessionStateMachine, inout [SessionAction], Duration) -> R, then: (@Sendable (R) -> Void)? = nil
  ) {
    loop.execute { [self] in
      whileOnLoop { session in
        var actions: [SessionAction] = []
        let result = body(&session.machine, &actions, session.now)
        session.perform(taking: &actions)
        then?(result)
      }
    }
  }

  /// Peers behind the federation (a federated relay), with where they are.
  package var federatedPeers: [(peer: Peer, site: PeerSite)] { machine.federatedPeers }

  /// Where a peer reached through relays is, when a federated relay said so: its site, or
  /// that it is offline (messages to it then wait until it connects again, at any site).
  /// `nil` for a peer connected to us, or reached through relays that do not federate.
  public func site(of peer: PeerID) -> PeerSite? { machine.site(of: peer) }
}
