import Nearby
import Synchronization

/// The names of the peers a chat has seen, to tell when two of them can be mistaken for
/// each other: the same name ignoring case, or the same ``NameSkeleton`` ("bob" and a "bоb"
/// with a Cyrillic `о`). Where a line would show only a name (a message), a name that looks
/// like another known peer's is shown with the peer's short id, for both peers.
///
/// It remembers at most ``capacity`` peers (the oldest are forgotten first), so a flood of
/// made-up peers costs bounded memory.
public struct KnownPeerNames: Sendable {
  public static let capacity = 4096

  private var keysByPeer: [PeerID: [String]] = [:]
  private var peersByKey: [String: Set<PeerID>] = [:]
  /// Peers in the order they were first seen (for forgetting the oldest).
  private var order: [PeerID] = []

  public init() {}

  /// Learns a peer's (current) name.
  public mutating func note(_ peer: Peer) {
    let keys = Self.keys(peer.name.value)
    if let old = keysByPeer[peer.id] {
      guard old != keys else { return }
      unindex(peer.id, old)
    } else {
      order.append(peer.id)
      if order.count > Self.capacity {
        let oldest = order.removeFirst()
        if let oldKeys = keysByPeer.removeValue(forKey: oldest) { unindex(oldest, oldKeys) }
      }
    }
    keysByPeer[peer.id] = keys
    for key in keys { peersByKey[key, default: []].insert(peer.id) }
  }

  /// Learns the peers a chat line names.
  public mutating func note(_ line: ChatLine) {
    switch line {
    case .ready(let me, _, _): note(me)
    case .event(let event): note(event)
    case .sent(_, _, let peers, _), .who(let peers, _): for peer in peers { note(peer) }
    case .peers(let found): for discovered in found { note(discovered.peer) }
    case .relayed(let peers):
      for relayed in peers {
        note(relayed.peer)
        note(relayed.via)
      }
    case .invitations(let pending): for invitation in pending { note(invitation.peer) }
    case .settled, .notice, .error, .transfers: break
    }
  }

  /// Learns the peers an event names.
  public mutating func note(_ event: SessionEvent) {
    switch event {
    case .found(let discovered), .updated(let discovered): note(discovered.peer)
    case .invitation(let invitation): note(invitation.peer)
    case .message(let message): note(message.from)
    case .reachable(let peer, let relay):
      note(peer)
      note(relay)
    case .lost(let peer), .invitationWithdrawn(let peer, _), .connecting(let peer), .connected(let peer, _), .declined(let peer, _),
      .disconnected(let peer, _), .delivered(_, let peer), .queued(_, let peer), .unreachable(let peer), .verification(let peer, _, _),
      .trusted(let peer),
      .reconnecting(let peer, _), .reconnected(let peer):
      note(peer)
    case .impostorWarning(let peer, let verified):
      note(peer)
      note(verified)
    case .error, .status, .transfer: break
    }
  }

  /// Whether another known peer has a name that looks like `peer`'s.
  public func looksAlike(_ peer: Peer) -> Bool {
    for key in Self.keys(peer.name.value) {
      if let peers = peersByKey[key], peers.contains(where: { $0 != peer.id }) { return true }
    }
    return false
  }

  /// The name to show for `peer` where a line shows no id: made safe for a terminal, and
  /// followed by the short id when it looks like another known peer's (`bob (5e6f7a8b)`).
  public func label(_ peer: Peer) -> String {
    let name = EventFormatter.sanitize(peer.name.value)
    return looksAlike(peer) ? "\(name) (\(peer.id.shortHex))" : name
  }

  /// Equal ignoring case, or the same skeleton ignoring case; and the same for the name's
  /// stem, what comes before a `(`, `:` or `,`. A name is shown before those marks (`bob
  /// (5e6f7a8b): hi`, `/who`'s `bob (5e6f7a8b), carol`), so a peer named `bob (5e6f7a8b)`,
  /// or `alice: I agree`, read as bob or alice and was no look-alike of either.
  static func keys(_ name: String) -> [String] {
    var keys: [String] = []
    func add(_ text: String) {
      for key in [text.lowercased(), NameSkeleton.key(text)] where !keys.contains(key) { keys.append(key) }
    }
    add(name)
    if let mark = name.firstIndex(where: { $0 == "(" || $0 == ":" || $0 == "," }) {
      var stem = name[..<mark]
      while stem.last?.isWhitespace == true { stem.removeLast() }
      while stem.first?.isWhitespace == true { stem.removeFirst() }
      if !stem.isEmpty { add(String(stem)) }
    }
    return keys
  }

  private mutating func unindex(_ id: PeerID, _ keys: [String]) {
    for key in keys {
      peersByKey[key]?.remove(id)
      if peersByKey[key]?.isEmpty == true { peersByKey[key] = nil }
    }
  }
}

/// ``KnownPeerNames`` shared by the threads that show lines.
final class SharedPeerNames: Sendable {
  private let names = Mutex(KnownPeerNames())

  /// Learns the peers of `line`, then runs `body` with what is known (under the lock: lines
  /// are rendered one at a time, in the order they are shown).
  func noting<T: Sendable>(_ line: ChatLine, _ body: (KnownPeerNames) -> T) -> T {
    names.withLock { names in
      names.note(line)
      return body(names)
    }
  }
}
