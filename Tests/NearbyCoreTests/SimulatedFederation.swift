import NearbyCore

/// Federated relays on the simulated network, with a stand-in for NATS: a store that keeps
/// frames per recipient until they are acknowledged and pushes them, in order, to the relay
/// where the recipient is connected (all of them again when it binds: what a JetStream
/// work-queue consumer recreated at each arrival does), and presence that every relay sees.
/// Each relay's shell is the real ``FederationLedger``; the store's acknowledgement tokens
/// are its sequence numbers.
struct SimulatedFederation {
  struct Stored {
    let sequence: UInt64
    let recipient: PeerID
    let frame: Frame
    let storedAt: Duration
  }

  var net = SimulatedNetwork()
  /// The site of each federated relay.
  var sites: [PeerID: String] = [:]
  var ledgers: [PeerID: FederationLedger<UInt64>] = [:]
  /// Frames not acknowledged yet, oldest first.
  var store: [Stored] = []
  private var nextSequence: UInt64 = 1
  /// The relay each recipient's queue is bound to.
  var bound: [PeerID: PeerID] = [:]
  /// Sequences pushed to the bound relay since the queue was bound.
  var pushed: Set<UInt64> = []
  /// Presence as every relay sees it.
  var presence: [PeerID: (peer: Peer, key: [UInt8], site: PeerSite)] = [:]
  /// The store refuses everything (NATS unavailable).
  var isDown = false
  /// Every frame published, in order (what a capture of the backbone would show).
  var published: [(recipient: PeerID, frame: Frame)] = []
  let limit: Duration

  init(limit: Duration = .seconds(3600)) { self.limit = limit }

  /// Adds a federated relay at `site` (or restarts it: a new machine and ledger, nothing
  /// bound to it any more, presence as the KV watch gives it on start).
  mutating func addRelay(_ relay: Peer, site: String) {
    net.add(relay, policy: .all) {
      $0.capabilities = [.relay, .federation]
      $0.federation = FederationSettings(site: site)
    }
    sites[relay.id] = site
    ledgers[relay.id] = FederationLedger(limit: limit)
    for (recipient, holder) in bound where holder == relay.id { bound[recipient] = nil }
    for (_, entry) in presence.sorted(by: { $0.key < $1.key }) {
      net.act(relay.id) { m, x, t in m.federationPeerUpdated(entry.peer, publicKey: entry.key, site: entry.site, now: t, into: &x) }
    }
  }

  mutating func addPeer(_ peer: Peer, federationAware: Bool = true) {
    net.add(peer, policy: .all) { $0.capabilities = federationAware ? [.federation] : [] }
  }

  /// `peer` invites `relay` (the session follows at the next ``run()``).
  mutating func connect(_ peer: PeerID, to relay: PeerID) {
    net.act(peer) { m, x, now in m.invite(relay, context: [], now: now, into: &x) }
  }

  /// Runs the network and the federation until nothing is left to do.
  mutating func run() {
    for _ in 0..<10_000 {
      net.run()
      guard !net.federationOutputs.isEmpty else { return }
      let outputs = net.federationOutputs
      net.federationOutputs = []
      for (relay, output) in outputs { handle(output, from: relay) }
    }
    preconditionFailure("the federation did not settle")
  }

  /// Advances the clock, running timers and the ledgers' expiry.
  mutating func advance(by duration: Duration) {
    net.advance(by: duration)
    for relay in ledgers.keys.sorted() {
      let due = ledgers[relay]!.expired(at: net.now)
      for key in due {
        net.act(relay) { m, x, _ in m.federationExpired(origin: key.origin, messageID: key.id, recipient: key.recipient, into: &x) }
      }
    }
    run()
  }

  private mutating func handle(_ output: FederationOutput, from relay: PeerID) {
    switch output {
    case .publish(let message, let recipient, _):
      if isDown {
        net.act(relay) { m, x, _ in m.federationStoreFailed(origin: message.sender, messageID: message.id, recipient: recipient, into: &x) }
        return
      }
      ledgers[relay]!.published(origin: message.sender, id: message.id, recipient: recipient, at: net.now)
      append(.message(message), for: recipient)
    case .report(let frame, let origin):
      guard !isDown else { return }
      append(frame, for: origin)
    case .receipted(let recipient, let origin, let ids):
      let done = Set(ledgers[relay]!.receipted(recipient: recipient, origin: origin, ids: ids))
      store.removeAll { done.contains($0.sequence) }
    case .arrived(let peer, let key):
      announce(peer, key: key, site: PeerSite(name: sites[relay]!, isOnline: true))
      bound[peer.id] = relay
      pushed = pushed.filter { sequence in !store.contains { $0.sequence == sequence && $0.recipient == peer.id } }
      pushAll()
    case .departed(let id):
      ledgers[relay]!.departed(id)
      if bound[id] == relay { bound[id] = nil }
      if let entry = presence[id] { announce(entry.peer, key: entry.key, site: PeerSite(name: sites[relay]!, isOnline: false)) }
    }
  }

  private mutating func announce(_ peer: Peer, key: [UInt8], site: PeerSite) {
    presence[peer.id] = (peer, key, site)
    for relay in sites.keys.sorted() {
      net.act(relay) { m, x, t in m.federationPeerUpdated(peer, publicKey: key, site: site, now: t, into: &x) }
    }
  }

  private mutating func append(_ frame: Frame, for recipient: PeerID) {
    store.append(Stored(sequence: nextSequence, recipient: recipient, frame: frame, storedAt: net.now))
    published.append((recipient, frame))
    nextSequence += 1
    pushAll()
  }

  /// Pushes every stored frame that was not pushed yet to its recipient's relay, in order.
  private mutating func pushAll() {
    for stored in store where !pushed.contains(stored.sequence) {
      guard let relay = bound[stored.recipient] else { continue }
      pushed.insert(stored.sequence)
      push(stored, to: relay)
    }
  }

  private mutating func push(_ stored: Stored, to relay: PeerID) {
    let sequence = stored.sequence
    if case .message(let message) = stored.frame {
      guard ledgers[relay]!.delivering(sequence, origin: message.sender, id: message.id, recipient: stored.recipient) else { return }
      let result = net.act(relay) { m, x, _ in m.federationReceived(stored.frame, for: stored.recipient, into: &x) }
      if result != .handedOn { ledgers[relay]!.notDelivered(origin: message.sender, id: message.id, recipient: stored.recipient) }
      if case .rejected = result { store.removeAll { $0.sequence == sequence } }
      return
    }
    switch stored.frame {
    case .delivered(let receipt): ledgers[relay]!.answered(origin: receipt.origin, ids: receipt.ids, recipient: receipt.recipient)
    case .undeliverable(let report) where report.reason != .queued:
      ledgers[relay]!.answered(origin: report.origin, ids: [report.messageID], recipient: report.recipient)
    default: break
    }
    let result = net.act(relay) { m, x, _ in m.federationReceived(stored.frame, for: stored.recipient, into: &x) }
    if result != .notHere && result != .unknownOrigin { store.removeAll { $0.sequence == sequence } }
  }
}
