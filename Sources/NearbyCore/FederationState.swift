/// How a relay takes part in a federation (PROTOCOL.md 9.6).
package struct FederationSettings: Hashable, Sendable {
  /// This relay's site, announced with its peers.
  package var site: String

  package init(site: String) { self.site = site }
}

/// What a session knows about the federation: the peers behind it (a federated relay), the
/// sites that rosters told (every peer), and the relayed messages whose receipts it may have
/// to send again.
struct FederationState: Sendable {
  /// Peers behind the federation, by presence: where they are (federated relays only).
  var remote: [PeerID: PeerSite] = [:]
  /// Sites from rosters that carry them: of the entries taken (a key that owns its id,
  /// within the roster limits), while the peer's record is kept.
  var sites: [PeerID: PeerSite] = [:]
  /// Relayed messages the application took: a copy that comes again (a relay that restarted
  /// delivers what it had not seen acknowledged) gets its receipt again.
  var receipted = SeenMessages(capacity: 65_536)
  /// Stored messages this relay handed to its peers (by origin and id): a receipt for one of
  /// them may go to an origin that presence calls offline (see `federateReport`).
  var handedOn = SeenMessages(capacity: 65_536)

  /// The hops of a federation route: the relay where the peer is connected, then the peer;
  /// an offline peer's route is long, so that any live route is preferred to it.
  static let onlineHops: UInt8 = 2
  static let offlineHops: UInt8 = 7
}

extension ConnectionID {
  /// The pseudo-connection of the federation: a route through it leads to a peer at another
  /// site (or offline), reached through NATS by the relay's shell. Never a real connection.
  package static let federation = ConnectionID(UInt64.max)
}
