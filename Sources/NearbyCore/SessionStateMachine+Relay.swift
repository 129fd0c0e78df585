// One file: a relay's rosters, routes and forwarding (PROTOCOL.md section 9) share the route
// table and the pacing of rosters: a roster changes routes, forwarding reads them, and the
// rules against loops and counting to infinity are checked in one place.

/// Relays (PROTOCOL.md section 9): rosters, forwarding, duplicate and loop suppression.
///
/// A relay forwards every MESSAGE it has not seen to the peers it reaches, decrementing the
/// hop limit, and routes DELIVERED and UNDELIVERABLE back towards their origin. It tells each
/// peer which peers it can reach (ROSTER), so a peer behind a relay can message a peer it
/// cannot discover itself. Routes prefer a direct session, then the fewest hops.
extension SessionStateMachine {
  /// The most hops a route may have; longer ones are ignored (no counting to infinity).
  static let maximumRouteHops: UInt8 = 8

  var isRelay: Bool { configuration.isRelay }

  /// Whether copies of a message may arrive (relays, or a peer with a relay connection).
  var deduplicates: Bool { isRelay || connections.values.contains { $0.toRelay } }

  /// Peers on the roster we would give to the peer on `excluded`: every non-relay peer we
  /// reach and whose key we know, with the hops from us (1: connected to us).
  func rosterEntries(excluding excluded: ConnectionID) -> [Frame.Roster.Entry] {
    var entries: [Frame.Roster.Entry] = []
    for (id, record) in peers where id != localPeer.id && !record.isRelay {
      guard let key = record.publicKey else { continue }
      if let session = record.session {
        if session != excluded { entries.append(Frame.Roster.Entry(peer: record.peer, hops: 1, publicKey: key, site: rosterSite(id))) }
      } else if let hops = bestHops(record, excluding: excluded) {
        entries.append(Frame.Roster.Entry(peer: record.peer, hops: hops + 1, publicKey: key, site: rosterSite(id)))
      }
    }
    return entries.sorted { $0.peer.id < $1.peer.id }
  }

  /// The fewest hops to a peer through relays other than `excluded` (split horizon).
  func bestHops(_ record: PeerRecord, excluding excluded: ConnectionID) -> UInt8? {
    var best: UInt8?
    for (connection, hops) in record.routes where connection != excluded && (best == nil || hops < best!) { best = hops }
    return best
  }

  /// The connection to use to reach a peer: its session, else its best relay route.
  func route(to id: PeerID) -> ConnectionID? {
    peers[id]?.session ?? peers[id]?.bestRoute
  }

  /// Session connections, in id order.
  var sessionConnections: [(ConnectionID, PeerID)] {
    peers.compactMap { id, record in record.session.map { ($0, id) } }.sorted { $0.0 < $1.0 }
  }

  // MARK: Sessions coming and going

  mutating func relaySessionEstablished(_ id: ConnectionID, peerID: PeerID, now: Duration, into actions: inout [SessionAction]) {
    let remoteIsRelay = connections[id]?.machine?.remoteIsRelay ?? false
    connections[id]?.toRelay = remoteIsRelay
    peers[peerID]?.isRelay = remoteIsRelay
    guard isRelay else { return }
    let entries = rosterEntries(excluding: id)
    // The full roster says everything: what waited for this connection goes with it.
    connections[id]?.rosterWaiting = [:]
    _ = takeRosterTokens(Self.rosterFrames(entries.count), on: id, now: now, evenIfShort: true)
    sendRoster(.full, entries, to: id, into: &actions)
    guard !remoteIsRelay, let peer = peers[peerID]?.peer, let key = peers[peerID]?.publicKey else { return }
    let entry = Frame.Roster.Entry(peer: peer, hops: 1, publicKey: key, site: rosterSite(peerID))
    for (other, _) in sessionConnections where other != id {
      sendRosterChanges([entry], [], to: other, now: now, into: &actions)
    }
    federationSessionEstablished(peer, publicKey: key, into: &actions)
  }

  /// A session connection is gone: its routes go with it; a relay tells its other peers.
  /// With `resuming` (the session waits to resume, or moved to a new connection), what we
  /// sent through it keeps waiting for its recipients' answers and goes again once the session
  /// is back; otherwise it fails now.
  mutating func relaySessionEnded(_ id: ConnectionID, peerID: PeerID, resuming: Bool = false, now: Duration, into actions: inout [SessionAction]) {
    // Peers that were behind it while it was away, if its session ends before its roster came.
    var stranded: Set<PeerID> = []
    if !resuming {
      failRelayed(through: id, reason: .connectionClosed(.connectionLost("the relay went away")), into: &actions)
      stranded = relayInFlight.removeValue(forKey: peerID)?.behind ?? []
    }
    var changed: [PeerID] = []
    for (other, record) in peers where record.routes[id] != nil {
      peers[other]?.routes[id] = nil
      changed.append(other)
    }
    if resuming {
      relaySuspended(peerID, on: id, stranding: changed.filter { peers[$0]?.session == nil && peers[$0]?.routes.isEmpty == true })
    }
    changed.append(peerID)
    federationSessionEnded(peerID, into: &actions)
    routesChanged(changed, from: id, wasDirect: peerID, now: now, into: &actions)
    strandedPeersLost(stranded, into: &actions)
  }

  // MARK: Rosters

  mutating func receivedRoster(_ roster: Frame.Roster, on id: ConnectionID, now: Duration, into actions: inout [SessionAction]) {
    guard connections[id]?.toRelay == true else { return }
    let limits = configuration.rosterLimits
    // A rate limit on ROSTER frames (a token bucket): an honest relay sends one per change of
    // its peers, batched; a flood closes the connection before it costs the others anything.
    guard connections[id]?.rosterTokens.take(burst: Double(limits.burst), perSecond: limits.framesPerSecond, now: now) == true else {
      rosterLimitExceeded(id, "more than \(limits.burst) ROSTER frames at once, or \(Int(limits.framesPerSecond)) a second", now: now, into: &actions)
      return
    }
    var changed: [PeerID] = []
    // What it named before a full roster stays known until the frame ends: it still counts
    // when room is asked for (else a full roster of new ids asked as if it named nothing).
    let namedBefore = connections[id]?.rosterRoutes ?? 0
    if roster.kind == .full {
      for (other, record) in peers where record.routes[id] != nil {
        peers[other]?.routes[id] = nil
        changed.append(other)
      }
      connections[id]?.rosterRoutes = 0
    }
    if roster.kind == .full { fullRosterCame(on: id, now: now) }
    var routes = connections[id]?.rosterRoutes ?? 0
    for entry in roster.entries where entry.peer.id != localPeer.id {
      let other = entry.peer.id
      // The key must own the id: a relay cannot slip its own key in for someone else's.
      guard configuration.endToEnd.owns(entry.publicKey, other) else {
        relayStatistics.forgeriesDropped += 1
        reportTampering(on: id, origin: other, detail: "its roster gives this peer a key that does not own its id", now: now, into: &actions)
        continue
      }
      // One lookup per entry, and the record changed in place through its index (each
      // `peers[other]?.…` hashed the id again: a debug build spent a fifth of a roster there).
      let known = peers.index(forKey: other)
      if roster.kind == .remove {
        if roster.carriesSites { federation.sites[other] = nil }
        guard let known, peers.values[known].routes.removeValue(forKey: id) != nil else { continue }
        routes -= 1
      } else if entry.hops >= 1, entry.hops <= Self.maximumRouteHops {
        let previous = known.flatMap { peers.values[$0].routes[id] }
        // Only changes count (and are passed on): a relay repeating itself costs little.
        if let known, previous == entry.hops, peers.values[known].peer.name == entry.peer.name || peers.values[known].session != nil {
          noteSite(of: entry, in: roster)
          continue
        }
        if previous == nil {
          // Bounded: peers through one relay (a relay bounds what another relay gives it; a
          // peer takes what its relay knows), and peers we know at all.
          guard routes < (isRelay ? limits.perRelay : limits.peers) else {
            connections[id]?.rosterRoutes = routes
            routesChanged(changed, from: id, wasDirect: nil, now: now, into: &actions)
            rosterLimitExceeded(id, "its rosters name more than \(isRelay ? limits.perRelay : limits.peers) peers", now: now, into: &actions)
            return
          }
          // At the limit of peers we know at all, the relay naming the most is closed
          // (SessionStateMachine+PeerBudget): another one, or this one.
          guard
            known != nil || peers.count < peerBudget
              || makeRoomByClosingTheLargestRoster(besides: id, given: max(routes, namedBefore), now: now, into: &actions)
          else {
            connections[id]?.rosterRoutes = routes
            routesChanged(changed, from: id, wasDirect: nil, now: now, into: &actions)
            rosterLimitExceeded(
              id, "with its roster this session would know more than \(peerBudget) peers, and no other relay's rosters name more", now: now,
              into: &actions)
            return
          }
          routes += 1
        }
        if let known {
          Self.learn(entry, via: id, into: &peers.values[known])
        } else {
          var record = PeerRecord(peer: entry.peer)
          Self.learn(entry, via: id, into: &record)
          peers[other] = record
        }
        // Only for an entry taken (its key owns its id, within the limits): a site of each
        // entry a relay sent was kept before, forged ones included, and never forgotten.
        noteSite(of: entry, in: roster)
      } else {
        continue
      }
      changed.append(other)
    }
    connections[id]?.rosterRoutes = routes
    routesChanged(changed, from: id, wasDirect: nil, now: now, into: &actions)
  }

  /// A roster entry's route, key and (unless we have a session with the peer) name.
  private static func learn(_ entry: Frame.Roster.Entry, via id: ConnectionID, into record: inout PeerRecord) {
    if record.publicKey == nil { record.publicKey = entry.publicKey }
    record.routes[id] = entry.hops
    if record.session == nil { record.peer = record.peer.renamed(entry.peer.name) }
  }

  /// How many reports of tampering one relay connection may make at once, and per second
  /// after that (``reportTampering(on:origin:detail:now:into:)``).
  package static let tamperingReports = (burst: 16, perSecond: 1.0)

  /// Reports what a relay did wrong (a forgery, a bad key) as an event: up to
  /// ``tamperingReports`` per connection; the next one shown says how many were not. (An
  /// event each was outside all flow control: a roster of 4 096 bad entries was 4 096
  /// events, 64 such rosters a second, and as many as a relay sent sealed messages of
  /// unknown origins.) ``relayStatistics`` counts them all.
  mutating func reportTampering(on id: ConnectionID, origin: PeerID, detail: String, now: Duration, into actions: inout [SessionAction]) {
    guard let record = connections[id] else { return }
    let shown = connections[id]!.tamperingTokens.take(
      burst: Double(Self.tamperingReports.burst), perSecond: Self.tamperingReports.perSecond, now: now)
    guard shown else {
      connections[id]!.tamperingHidden += 1
      return
    }
    let hidden = record.tamperingHidden
    connections[id]!.tamperingHidden = 0
    let more = hidden == 0 ? "" : " (and \(hidden) more from this relay that were not shown)"
    actions.append(.emit(.error(.relayTampered(relay: connectionPeer(id), origin: origin, detail: detail + more))))
  }

  /// A relay's rosters went over ``RosterLimits``: ERROR `resourceExhausted`, naming the
  /// limit, and the connection closes (its routes go with it).
  mutating func rosterLimitExceeded(_ id: ConnectionID, _ detail: String, now: Duration, into actions: inout [SessionAction]) {
    relayStatistics.rosterLimitCloses += 1
    actions.append(.emit(.status(.connectionRejected(peer: connectionPeer(id), reason: "ROSTER limit: \(detail)"))))
    limitExceeded(id, code: .resourceExhausted, detail: detail, now: now, into: &actions)
  }

  /// Sends `entries` as ROSTER frames of at most ``ProtocolLimits/maximumRosterEntries``
  /// (a `full` roster: the first frame `full`, the others `add`).
  func sendRoster(_ kind: RosterKind, _ entries: [Frame.Roster.Entry], to connection: ConnectionID, into actions: inout [SessionAction]) {
    var start = 0
    repeat {
      let end = min(start + ProtocolLimits.maximumRosterEntries, entries.count)
      let frameKind: RosterKind = kind == .full && start > 0 ? .add : kind
      actions.append(.send(connection, .roster(roster(frameKind, Array(entries[start..<end]), to: connection))))
      start = end
    } while start < entries.count
  }

  /// How a relay paces the ROSTER frames it sends each peer: at most ``burst`` at once and
  /// ``framesPerSecond`` after that, a quarter of what a peer accepts (``RosterLimits``: 256,
  /// then 64 a second). Changes beyond that wait, and go together ``interval`` later, each
  /// peer's latest state once. Without it, one peer connecting and leaving 35 times a second
  /// (or a relay flipping its roster) made us send every other peer more frames than it
  /// accepts, and each closed its connection to us within seconds.
  package static let rosterPace = (burst: 64, framesPerSecond: 16.0, interval: Duration.milliseconds(250))

  /// Frames a roster of `entries` entries takes (0 for none).
  static func rosterFrames(_ entries: Int) -> Int {
    (entries + ProtocolLimits.maximumRosterEntries - 1) / ProtocolLimits.maximumRosterEntries
  }

  /// Takes `frames` of the connection's pace (``rosterPace``). - Returns: whether it had
  /// them (with `evenIfShort`, they are taken anyway, down to none).
  mutating func takeRosterTokens(_ frames: Int, on connection: ConnectionID, now: Duration, evenIfShort: Bool = false) -> Bool {
    connections[connection]?.rosterSendTokens.take(
      Double(frames), burst: Double(Self.rosterPace.burst), perSecond: Self.rosterPace.framesPerSecond, now: now, evenIfShort: evenIfShort) ?? false
  }

  /// Roster changes for one peer of ours (we are its relay): sent now while the pace allows
  /// and nothing waits before them; otherwise they wait (see ``rosterPace``).
  mutating func sendRosterChanges(
    _ additions: [Frame.Roster.Entry], _ removals: [Frame.Roster.Entry], to connection: ConnectionID, now: Duration,
    into actions: inout [SessionAction]
  ) {
    guard !additions.isEmpty || !removals.isEmpty, connections[connection] != nil else { return }
    let frames = Self.rosterFrames(additions.count) + Self.rosterFrames(removals.count)
    if connections[connection]!.rosterWaiting.isEmpty, takeRosterTokens(frames, on: connection, now: now) {
      if !additions.isEmpty { sendRoster(.add, additions, to: connection, into: &actions) }
      if !removals.isEmpty { sendRoster(.remove, removals, to: connection, into: &actions) }
      return
    }
    for entry in additions { connections[connection]!.rosterWaiting[entry.peer.id] = entry }
    for entry in removals { connections[connection]!.rosterWaiting[entry.peer.id] = entry }
    if rosterFlushDue == nil { rosterFlushDue = now + Self.rosterPace.interval }
  }

  /// Sends the roster changes that waited (``sendRosterChanges(_:_:to:now:into:)``), each
  /// peer as it is now, to every peer the pace allows; the others wait another interval.
  mutating func sendWaitingRosters(now: Duration, into actions: inout [SessionAction]) {
    guard let due = rosterFlushDue, due <= now else { return }
    rosterFlushDue = nil
    for connection in connections.keys.sorted() where connections[connection]?.rosterWaiting.isEmpty == false {
      let waiting = connections[connection]!.rosterWaiting
      guard let receiver = connections[connection]!.peerID, peers[receiver]?.session == connection else {
        connections[connection]!.rosterWaiting = [:]
        continue
      }
      var additions: [Frame.Roster.Entry] = []
      var removals: [Frame.Roster.Entry] = []
      for other in waiting.keys.sorted() where other != receiver {
        let record = peers[other]
        if let record, !record.isRelay, let key = record.publicKey, record.session != connection,
          let hops = record.session != nil ? 0 : bestHops(record, excluding: connection)
        {
          additions.append(Frame.Roster.Entry(peer: record.peer, hops: hops + 1, publicKey: key, site: rosterSite(other)))
        } else {
          let entry = waiting[other]!
          removals.append(Frame.Roster.Entry(peer: entry.peer, hops: 1, publicKey: entry.publicKey))
        }
      }
      guard takeRosterTokens(Self.rosterFrames(additions.count) + Self.rosterFrames(removals.count), on: connection, now: now) else {
        rosterFlushDue = now + Self.rosterPace.interval
        continue
      }
      connections[connection]!.rosterWaiting = [:]
      if !additions.isEmpty { sendRoster(.add, additions, to: connection, into: &actions) }
      if !removals.isEmpty { sendRoster(.remove, removals, to: connection, into: &actions) }
    }
  }

  /// Reports reachability changes (peers) or passes roster changes on (relays).
  /// In O(changes × sessions): each other session gets one ROSTER of additions and one of
  /// removals for the whole batch, not one frame per changed peer.
  mutating func routesChanged(_ changed: [PeerID], from source: ConnectionID, wasDirect: PeerID?, now: Duration, into actions: inout [SessionAction])
  {
    guard !changed.isEmpty else { return }
    var seenIDs = Set<PeerID>()
    let sessions = isRelay ? sessionConnections.map(\.0).filter { $0 != source } : []
    var additions: [ConnectionID: [Frame.Roster.Entry]] = [:]
    var removals: [ConnectionID: [Frame.Roster.Entry]] = [:]
    defer {
      for connection in sessions {
        sendRosterChanges(additions[connection] ?? [], removals[connection] ?? [], to: connection, now: now, into: &actions)
      }
    }
    for other in changed where seenIDs.insert(other).inserted {
      guard let record = peers[other] else { continue }
      let reachable = record.session != nil || !record.routes.isEmpty
      if isRelay {
        guard !record.isRelay else { continue }
        // Tell every other peer the new distance (or that it is gone).
        guard let key = record.publicKey else { continue }
        for connection in sessions where record.session != connection {
          if let hops = record.session != nil ? 0 : bestHops(record, excluding: connection) {
            additions[connection, default: []].append(Frame.Roster.Entry(peer: record.peer, hops: hops + 1, publicKey: key, site: rosterSite(other)))
          } else {
            removals[connection, default: []].append(Frame.Roster.Entry(peer: record.peer, hops: 1, publicKey: key))
          }
        }
      } else if record.session == nil {
        // A roster names a peer that waited behind a relay that was away: from now on it is
        // where rosters say (another relay's, or the resumed one's), and what waits for it
        // goes there (not twice over the resumed relay: resendRelayed(to:via:into:)).
        let strandedBehind = record.routes.isEmpty ? nil : unstrand(other)
        if let route = record.bestRoute, let relay = connectionPeer(route), !isOffline(other) {
          if !record.announcedReachable || strandedBehind != nil {
            if !record.announcedReachable || strandedBehind != relay.id {
              // Fresh when it was not reachable before: a reader far behind then gets neither
              // it nor an unreachable that follows (EventHub's ItemQueue).
              actions.append(record.announcedReachable ? .emit(.reachable(record.peer, via: relay)) : .emitFresh(.reachable(record.peer, via: relay)))
            }
            peers[other]?.announcedReachable = true
            relayedBack(other)
            resendRelayed(to: other, via: route, into: &actions)
          }
        } else if record.announcedReachable, !isStranded(other) {
          // (A peer behind a relay that is away for a moment stays reachable: messages to it
          // wait for the relay, SessionStateMachine+RelayResend.swift.)
          peers[other]?.announcedReachable = false
          actions.append(.emit(.unreachable(record.peer)))
          relayedAway(other)
        }
      }
      if !reachable { forgetIfIdle(other) }
    }
  }

  // MARK: Forwarding

  /// A relay forwards a message it has not seen (the caller checked).
  mutating func forward(_ message: Frame.Message, from incoming: ConnectionID, into actions: inout [SessionAction]) {
    let canGoFurther = message.hopLimit > 1
    var forwarded = message
    forwarded.hopLimit = message.hopLimit > 0 ? message.hopLimit - 1 : 0
    var targets: [ConnectionID] = []
    var federated: [PeerID] = []
    if message.recipients.isEmpty {
      for (connection, peerID) in sessionConnections where connection != incoming && peerID != message.sender {
        if peers[peerID]?.isRelay == true && !canGoFurther {
          relayStatistics.hopLimitDrops += 1
          continue
        }
        targets.append(connection)
      }
    } else {
      for recipient in message.recipients where recipient != localPeer.id {
        var target: ConnectionID?
        if let direct = peers[recipient]?.session {
          target = direct
        } else if canGoFurther {
          target = peers[recipient]?.bestRoute
        }
        // A recipient that is reached back the way the message came: the previous relay
        // delivers it (split horizon), so nothing is reported.
        if target == incoming { continue }
        if target == .federation {
          federated.append(recipient)
          continue
        }
        guard let target else {
          let reason: UndeliverableReason = canGoFurther || peers[recipient]?.routes.isEmpty != false ? .unknownRecipient : .hopLimit
          if reason == .hopLimit { relayStatistics.hopLimitDrops += 1 } else { relayStatistics.unknownRecipients += 1 }
          let report = Frame.Undeliverable(origin: message.sender, messageID: message.id, recipient: recipient, reason: reason)
          actions.append(.send(incoming, .undeliverable(report)))
          continue
        }
        if !targets.contains(target) { targets.append(target) }
      }
    }
    if !federated.isEmpty { federate(forwarded, to: federated, into: &actions) }
    guard !targets.isEmpty || !federated.isEmpty else { return }
    relayStatistics.forwardedMessages += 1
    relayStatistics.forwardedBytes += UInt64(message.body.count * (targets.count + federated.count))
    if !targets.isEmpty { actions.append(.sendMessage(forwarded, targets)) }
  }

  /// Sends a DELIVERED or UNDELIVERABLE on towards its origin (relays only).
  mutating func routeTowardOrigin(_ origin: PeerID, _ frame: Frame, from incoming: ConnectionID, into actions: inout [SessionAction]) {
    guard isRelay, let target = route(to: origin), target != incoming else { return }
    if target == .federation {
      federateReport(frame, origin: origin, vouched: isVouchedReceipt(frame, from: incoming), into: &actions)
      return
    }
    actions.append(.send(target, frame))
  }

  /// The shell could not queue a message on a connection: a relay reports it to the origin.
  package mutating func forwardFailed(_ message: Frame.Message, on id: ConnectionID, into actions: inout [SessionAction]) {
    guard isRelay, message.sender != localPeer.id, let recipient = connections[id]?.peerID else { return }
    relayStatistics.queueFullDrops += 1
    let report = Frame.Undeliverable(origin: message.sender, messageID: message.id, recipient: recipient, reason: .queueFull)
    guard let target = route(to: message.sender) else { return }
    if target == .federation {
      federateReport(.undeliverable(report), origin: message.sender, vouched: true, into: &actions)
    } else {
      actions.append(.send(target, .undeliverable(report)))
    }
  }
}
