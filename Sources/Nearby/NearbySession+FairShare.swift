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
/// fair share of messages wait in the hub: a ping-pong never looks anything up for it.
///
/// Order: a connection's messages keep their order, and no later event overtakes a message
/// held back: one about a peer ("delivered") releases the connections holding messages
/// from that peer first, any other event releases all (those are rare).
extension NearbySession {
  /// The most messages of one connection in the hub at once: a few batches of the event
  /// cursor (``EventCursor/batchSize``), so that a consumer of one busy peer never runs dry.
  package static let fairShare = 64

  /// A received message of `connection`, of which `decided` were published or held back
  /// before it and are not taken yet: into `delivered` (published with the batch) unless the
  /// connection has its share in the hub, or messages of its own waiting already.
  func admit(_ publication: EventHub.Publication, from connection: ConnectionID, decided: Int, into delivered: inout [EventHub.Publication]) {
    let held = guards.heldBack.index(forKey: connection)
    let waiting = held.map { guards.heldBack.values[$0].count } ?? 0
    guard waiting > 0 || decided - waiting >= Self.fairShare else {
      delivered.append(publication)
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
    for connection in guards.heldBack.keys.sorted() {
      guard let slot = guards.heldBack.index(forKey: connection) else { continue }
      // A closed connection's messages go now.
      let room = untaken[connection].map { Self.fairShare - ($0.messages - guards.heldBack.values[slot].count) } ?? .max
      guard room > 0 else { continue }
      guards.heldBack.values[slot].publish(upTo: room, to: hub)
      if guards.heldBack.values[slot].count == 0 { guards.heldBack.remove(at: slot) }
    }
  }

  /// Publishes what waits from connections holding messages from `peer` (all connections when
  /// `peer` is nil), before an event that must not overtake them.
  func releaseHeldBack(from peer: PeerID?) {
    for connection in guards.heldBack.keys.sorted() {
      guard let slot = guards.heldBack.index(forKey: connection) else { continue }
      guard peer.map({ guards.heldBack.values[slot].origins.contains($0) }) ?? true else { continue }
      guards.heldBack.remove(at: slot).value.publishAll(to: hub)
    }
  }

  /// Publishes what waits from `connection` (it closed).
  func releaseHeldBack(of connection: ConnectionID) {
    guards.heldBack.removeValue(forKey: connection)?.publishAll(to: hub)
  }
}

/// One connection's messages held back from the hub, oldest first, and whose they are.
struct HeldMessages {
  private var publications: [EventHub.Publication] = []
  private var head = 0
  /// The origins of the messages (a relay's connection carries many peers'), so that an
  /// event about one of them releases them first.
  private(set) var origins: Set<PeerID> = []

  var count: Int { publications.count - head }

  mutating func append(_ publication: EventHub.Publication) {
    if let claim = publication.claim { origins.insert(claim.taken.origin) }
    publications.append(publication)
  }

  /// Publishes the oldest `limit`, in order.
  mutating func publish(upTo limit: Int, to hub: EventHub) {
    let end = limit >= count ? publications.count : head + limit
    hub.publish(publications[head..<end])
    head = end
    if head == publications.count {
      publications.removeAll(keepingCapacity: true)
      head = 0
      origins.removeAll(keepingCapacity: true)
    } else if head >= 1024, head * 2 >= publications.count {
      publications.removeFirst(head)
      head = 0
    }
  }

  /// Publishes all of them, in order.
  func publishAll(to hub: EventHub) { hub.publish(publications[head...]) }
}
