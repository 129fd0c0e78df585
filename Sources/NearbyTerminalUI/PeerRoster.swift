import Nearby
import NearbyChat

/// What the terminal chat knows about other peers: who is found, connected and inviting,
/// for the prompt's counts and for Tab completion. It follows the chat's lines and, to
/// catch what no line reports (an invitation declined with /decline), snapshots of the
/// session.
public struct PeerRoster: Equatable, Sendable {
  public private(set) var found: [PeerID: Peer] = [:]
  public private(set) var connected: [PeerID: Peer] = [:]
  public private(set) var inviting: [PeerID: Peer] = [:]
  /// Peers reached through a relay.
  public private(set) var relayed: [PeerID: Peer] = [:]
  /// A short mark shown after a peer's name in the status bar: ``unverifiedMark`` for a
  /// peer connected or reached through a relay without a verified key (its code was never
  /// compared: `/verify`, then `/trust`), cleared when it is verified.
  public private(set) var marks: [PeerID: String] = [:]
  /// Peers whose keys are verified in the known-peers file, as far as the chat has seen
  /// (connections, `/who`, `/trust` and the session's snapshots).
  public private(set) var verified: Set<PeerID> = []

  /// The mark of a connected peer whose key is not verified.
  public static let unverifiedMark = "?"

  public init() {}

  public mutating func apply(_ line: ChatLine) {
    switch line {
    case .event(let event): apply(event)
    case .peers(let peers): found = Dictionary(peers.map { ($0.peer.id, $0.peer) }, uniquingKeysWith: { $1 })
    case .who(let peers, let verified):
      connected = Dictionary(peers.map { ($0.id, $0) }, uniquingKeysWith: { $1 })
      self.verified = verified
      markReachablePeers()
    case .invitations(let pending): inviting = Dictionary(pending.map { ($0.peer.id, $0.peer) }, uniquingKeysWith: { $1 })
    case .relayed(let peers):
      relayed = Dictionary(peers.map { ($0.peer.id, $0.peer) }, uniquingKeysWith: { $1 })
      for peer in peers {
        if peer.isVerified { verified.insert(peer.peer.id) } else { verified.remove(peer.peer.id) }
      }
      markReachablePeers()
    case .ready, .sent, .settled, .notice, .error, .transfers: break
    }
  }

  public mutating func apply(_ event: SessionEvent) {
    switch event {
    case .found(let discovered), .updated(let discovered): found[discovered.peer.id] = discovered.peer
    case .lost(let peer): found[peer.id] = nil
    case .invitation(let invitation): inviting[invitation.peer.id] = invitation.peer
    case .invitationWithdrawn(let peer, _): inviting[peer.id] = nil
    case .connected(let peer, let security):
      connected[peer.id] = peer
      inviting[peer.id] = nil
      if security.isVerified { verified.insert(peer.id) } else { verified.remove(peer.id) }
      marks[peer.id] = security.isVerified ? nil : Self.unverifiedMark
    case .trusted(let peer):
      verified.insert(peer.id)
      marks[peer.id] = nil
    case .disconnected(let peer, _): connected[peer.id] = nil
    case .reachable(let peer, _):
      relayed[peer.id] = peer
      marks[peer.id] = verified.contains(peer.id) ? nil : Self.unverifiedMark
    case .unreachable(let peer): relayed[peer.id] = nil
    default: break
    }
  }

  /// Replaces everything with what the session reports (`verified`: nil leaves what is known
  /// of verified keys as it is).
  public mutating func replace(found: [Peer], connected: [Peer], inviting: [Peer], verified: Set<PeerID>? = nil) {
    self.found = Dictionary(found.map { ($0.id, $0) }, uniquingKeysWith: { $1 })
    self.connected = Dictionary(connected.map { ($0.id, $0) }, uniquingKeysWith: { $1 })
    self.inviting = Dictionary(inviting.map { ($0.id, $0) }, uniquingKeysWith: { $1 })
    if let verified {
      self.verified = verified
      markReachablePeers()
    }
  }

  /// Marks every connected or relayed peer by whether its key is verified.
  private mutating func markReachablePeers() {
    for id in Set(connected.keys).union(relayed.keys) { marks[id] = verified.contains(id) ? nil : Self.unverifiedMark }
  }

  /// Sets or clears (nil) the mark shown after a peer's name.
  public mutating func setMark(_ mark: String?, for peer: PeerID) { marks[peer] = mark }

  /// The mark of a peer, if it has one.
  public func mark(for peer: PeerID?) -> String? { peer.flatMap { marks[$0] } }

  /// Whether messages to the peer can go anywhere: it is connected, or reached through a relay.
  public func isReachable(_ peer: PeerID) -> Bool { connected[peer] != nil || relayed[peer] != nil }

  /// Every peer known, connected ones first, without repeats (for /query).
  public var allPeers: [Peer] {
    var seen = Set<PeerID>()
    var peers: [Peer] = []
    for peer in Array(connected.values) + Array(relayed.values) + Array(found.values) + Array(inviting.values) where seen.insert(peer.id).inserted {
      peers.append(peer)
    }
    return peers
  }

  /// Every name known, sorted, without repeats (for completion).
  public var names: [String] {
    let all = Set(found.values.map(\.name.value)).union(connected.values.map(\.name.value)).union(inviting.values.map(\.name.value))
      .union(relayed.values.map(\.name.value))
    return all.sorted()
  }
}
