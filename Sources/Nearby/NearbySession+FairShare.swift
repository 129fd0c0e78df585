import NearbyCore

/// Received messages reach the application fairly: each connection has at most
/// ``NearbySession/fairShare`` of its messages in the event hub at once, and the rest waits
/// here (still counted as untaken, so that the connection's reading pauses as before) until
/// the application takes some of those. The event sequence is one queue: without this, a peer
/// that floods the session filled it with up to ``SessionConfiguration/maximumUntakenMessages``
/// messages, and another peer's message waited behind all of them (the hostile benchmark saw
/// 2,000–6,000 events ahead of each of the honest peer's messages, 2–6 ms, in about half of
/// its runs). Now it waits behind at most a fair share of each flooding connection's.
///
/// Only a session with several connections holds messages back (one with a single peer has
/// nobody to be fair to, and its stream runs as fast as before), and only once more than a
/// fair share of messages wait in the hub: a ping-pong never looks anything up for it. The
/// share is per connection: peers behind one relay share that relay's.
///
/// Order: a connection's messages keep their order, and no event about a peer overtakes that
/// peer's messages held back: it waits behind them, in the same queue (a peer's
/// "disconnected" or receipt came before its last messages). Events about nobody in
/// particular, or about other peers, do not wait: a flooding peer cannot delay them, and
/// cannot make the session publish what it holds back by causing one.
extension NearbySession {
  /// The most messages of one connection in the hub at once: two batches of the event
  /// cursor (``EventCursor/batchSize``), so that a consumer of a busy peer finds the next
  /// batch there while the loop tops up the one after.
  package static let fairShare = 2 * EventCursor.batchSize

  /// A received message of `connection`, of which `decided` were published or held back
  /// before it and are not taken yet: published with the batch (``publishing``) unless the
  /// connection has its share in the hub, or messages of its own waiting already.
  func admit(_ publication: consuming EventHub.Publication, from connection: ConnectionID, decided: Int) {
    let held = guards.heldBack.index(forKey: connection)
    let waiting = held.map { guards.heldBack.values[$0].messages } ?? 0
    guard waiting > 0 || decided - waiting >= Self.fairShare else {
      publishing.append(publication)
      return
    }
    if let held {
      guards.heldBack.values[held].append(publication)
    } else {
      var messages = HeldMessages()
      messages.append(publication)
      guards.heldBack[connection] = messages
    }
  }

  /// Tops up each connection's share in the hub from what it has waiting (after the
  /// application took some of its messages).
  func publishHeldBack() {
    flushPublishing()
    for connection in Array(guards.heldBack.keys) {
      guard let slot = guards.heldBack.index(forKey: connection) else { continue }
      // A closed connection's messages go now.
      let room = untaken[connection].map { Self.fairShare - ($0.messages - guards.heldBack.values[slot].messages) } ?? .max
      guard room > 0 else { continue }
      guards.heldBack.values[slot].publish(upTo: room, to: hub)
      if guards.heldBack.values[slot].isEmpty { guards.heldBack.remove(at: slot) }
    }
  }

  /// Whether messages of `peer` are held back (an event about it must wait behind them).
  func holdsMessages(from peer: PeerID) -> Bool {
    !guards.heldBack.isEmpty && guards.heldBack.values.contains { $0.concerns(peer) }
  }

  /// Puts an event about a peer behind that peer's messages held back, if it has some on one
  /// connection. With some on several (directly and through a relay), those go now, and the
  /// event after them. `fresh`: see ``SessionAction/emitFresh(_:)``.
  /// - Returns: whether the event was held back (else the caller publishes it).
  func holdBehindItsPeer(_ event: SessionEvent, fresh: Bool = false) -> Bool {
    guard let peer = event.concernedPeer else { return false }
    var holding: ConnectionID?
    for (connection, held) in guards.heldBack where held.concerns(peer) {
      guard holding == nil else {
        for (other, held) in guards.heldBack where held.concerns(peer) { releaseHeldBack(of: other) }
        return false
      }
      holding = connection
    }
    guard let holding else { return false }
    guards.heldBack[holding]?.append(EventHub.Publication(element: .session(event), fresh: fresh))
    return true
  }

  /// Publishes what waits from `connection` (it closed, or its peer's event cannot wait).
  func releaseHeldBack(of connection: ConnectionID) {
    flushPublishing()
    guards.heldBack.removeValue(forKey: connection)?.publishAll(to: hub)
  }

  /// Publishes everything held back (the session ends).
  func releaseAllHeldBack() {
    for connection in Array(guards.heldBack.keys) { releaseHeldBack(of: connection) }
  }
}

/// One connection's messages held back from the hub, oldest first, with the events about
/// their peers that came after them; and which peers they concern.
///
/// A peer's reachability may change without end while its messages wait here (a relay adding
/// and removing it from its roster, over and over, while the application does not read): a
/// newer `reachable` or `unreachable` about a peer replaces the one held since anything
/// else of that peer, merged as a lagging reader's are (``EventHub/Item/superseding(_:)``),
/// and goes at the end. One held before anything else of its peer (a message, an offer, a
/// receipt, a `disconnected`) stays where it is: the reader learns that the peer became
/// reachable before reading what it sent. So what is held stays within twice what else is
/// held (messages, which the untaken limits bound, and the peer's other events) and one
/// such event per peer.
struct HeldMessages {
  /// Holes (`nil`) are events that a newer one replaced.
  private var publications: [EventHub.Publication?] = []
  private var head = 0
  /// The position (counted from the first ever held) of `publications[0]`.
  private var base = 0
  /// How many of them are messages (they have a claim; events do not).
  private(set) var messages = 0
  /// Events and messages held, without the holes.
  private(set) var count = 0
  /// For each peer, how many of those still held concern it: its messages (a relay's
  /// connection carries many peers') and events about it. A later event about one of these
  /// peers waits behind them; about any other peer, it need not. (A set of origins, emptied
  /// only when everything went, kept naming peers whose messages had all been published, and
  /// their events waited behind other peers' messages.)
  private var concerned: [PeerID: Int] = [:]
  /// The position of the event held about a peer's reachability that a newer one replaces
  /// (none once anything else of that peer came after it, or it was published).
  private var replaceable: [HubEvent.SupersedingKey: Int] = [:]

  var isEmpty: Bool { count == 0 }

  /// Whether anything held concerns `peer` (an event about it must wait behind it).
  func concerns(_ peer: PeerID) -> Bool { concerned[peer] != nil }

  mutating func append(_ publication: EventHub.Publication) {
    var publication = publication
    let key = publication.claim == nil ? publication.element.supersedingKey : nil
    if publication.claim != nil { messages += 1 }
    if !replaceable.isEmpty, let peer = publication.concernedPeer, key != .reach(peer) { replaceable[.reach(peer)] = nil }
    if let key {
      if let position = replaceable.removeValue(forKey: key), let old = publications[position - base].take() {
        count -= 1
        if let peer = old.concernedPeer { release(peer) }
        let newer = EventHub.Item(publication.element, fresh: publication.fresh)
        guard let merged = EventHub.Item(old.element, fresh: old.fresh).superseding(newer) else { return }
        publication = EventHub.Publication(element: merged.element, claim: nil, fresh: merged.fresh)
      }
      replaceable[key] = base + publications.count
    }
    if let peer = publication.concernedPeer { concerned[peer, default: 0] += 1 }
    publications.append(publication)
    count += 1
  }

  /// Publishes the oldest `limit` messages in order, with the events between them and those
  /// right after the last (they wait for nothing more).
  mutating func publish(upTo limit: Int, to hub: EventHub) {
    var end = head
    var published = 0
    // Moved out of storage (holes left behind), which then no longer keeps them.
    var handed: [EventHub.Publication] = []
    while end < publications.count, published < limit || publications[end]?.claim == nil {
      if let publication = publications[end].take() {
        if publication.claim != nil { published += 1 }
        if let peer = publication.concernedPeer { release(peer) }
        if !replaceable.isEmpty, let key = publication.element.supersedingKey, replaceable[key] == base + end { replaceable[key] = nil }
        count -= 1
        handed.append(publication)
      }
      end += 1
    }
    hub.publish(handed)
    head = end
    messages -= published
    if head == publications.count {
      base += publications.count
      publications.removeAll(keepingCapacity: true)
      head = 0
    } else if head >= 1024, head * 2 >= publications.count {
      base += head
      publications.removeFirst(head)
      head = 0
    }
  }

  /// Publishes all of them, in order.
  func publishAll(to hub: EventHub) { hub.publish(publications[head...].compactMap { $0 }) }

  private mutating func release(_ peer: PeerID) {
    guard let slot = concerned.index(forKey: peer) else { return }
    if concerned.values[slot] > 1 {
      concerned.values[slot] -= 1
    } else {
      concerned.remove(at: slot)
    }
  }
}

extension EventHub.Publication {
  /// The peer this concerns: a message's origin, or the peer an event is about.
  var concernedPeer: PeerID? {
    if let claim { return claim.taken.origin }
    guard case .session(let event) = element else { return nil }
    return event.concernedPeer
  }
}

extension SessionEvent {
  /// The peer whose messages this event must not overtake: the one it is about (nil for
  /// discovery and the session's own news, which no message of a session orders).
  var concernedPeer: PeerID? {
    switch self {
    case .found, .updated, .lost: nil
    case .invitation(let invitation): invitation.peer.id
    case .invitationWithdrawn(let peer, _), .connecting(let peer), .connected(let peer, _), .declined(let peer, _),
      .reconnecting(let peer, _), .reconnected(let peer), .disconnected(let peer, _), .delivered(_, let peer), .queued(_, let peer),
      .reachable(let peer, _), .unreachable(let peer), .verification(let peer, _, _), .trusted(let peer), .impostorWarning(let peer, _):
      peer.id
    case .message(let message): message.from.id
    case .error(let error):
      switch error {
      case .undelivered(_, _, let peerID, _): peerID
      case .connectFailed(let peer, _), .protocolError(let peer, _), .authenticationFailed(let peer, _): peer?.id
      case .relayTampered(_, let origin, _): origin
      case .rejected: nil
      }
    case .status(.connectionRejected(let peer, _)): peer?.id
    case .status: nil
    case .transfer(let transfer):
      switch transfer {
      case .offer(let offer): offer.from.id
      case .started(let progress), .progress(let progress): progress.peer.id
      case .finished(_, let peer, _, _, _): peer.id
      }
    }
  }
}
