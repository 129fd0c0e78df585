/// The peers a session keeps, shared fairly between the sources that name peers for it:
/// each relay connection (its rosters) and the federation (presence).
///
/// A session knows at most ``peerBudget`` peers. Before, the first sources to fill it kept
/// it: four connections that said they were relays, each naming the 16 384 made-up peers one
/// relay connection may give (each with a key that owns its id: cheap to make), or a flood of
/// presence on NATS, filled a relay's 65 536; from then on every honest relay whose roster
/// named a new peer was closed with ERROR `resourceExhausted`, and honest presence was left
/// out. Now a source that gave fewer peers than another takes room from the one that gave
/// the most, as pending invitations are shared between hosts: that source's routes to some
/// of its peers are dropped (and the peers forgotten when nothing else leads to them) until
/// it gave at most one more than the newcomer. Only the source that gave the most, when the
/// budget is full, is refused.
extension SessionStateMachine {
  /// The most peers this session keeps (connected, discovered and reached through relays):
  /// ``RosterLimits/peers`` for a relay, twice that for a peer (its relay's, and those it
  /// found itself).
  var peerBudget: Int { isRelay ? configuration.rosterLimits.peers : 2 * configuration.rosterLimits.peers }

  /// The source (other than `source`) that gave the most peers, when it gave at least two
  /// more than `given`, what `source` gave: the one that makes room for it.
  func peerBudgetHolder(over source: ConnectionID, given: Int) -> (source: ConnectionID, given: Int)? {
    var holder: (source: ConnectionID, given: Int)?
    for (id, record) in connections where id != source && record.toRelay && record.rosterRoutes > (holder?.given ?? 0) {
      holder = (id, record.rosterRoutes)
    }
    if source != .federation, federation.remote.count > (holder?.given ?? 0) { holder = (.federation, federation.remote.count) }
    guard let holder, holder.given >= given + 2 else { return nil }
    return holder
  }

  /// Makes room for one more peer that `source` (which gave `given` so far) names, while the
  /// session knows ``peerBudget`` peers: the source that gave the most gives up routes until
  /// there is room or it gave at most one more than `source`. Each step drops up to
  /// `wanted` routes (the peers `source` is about to name), and at most half the difference.
  /// - Returns: whether there is room now.
  mutating func makeRoomForPeer(
    from source: ConnectionID, given: Int, wanted: Int, now: Duration, into actions: inout [SessionAction]
  ) -> Bool {
    while peers.count >= peerBudget {
      guard let holder = peerBudgetHolder(over: source, given: given) else { return false }
      // Each step scans every peer once: a batch at a time keeps the steps few.
      let dropped = dropRoutes(of: holder.source, count: max(1, min(wanted, (holder.given - given) / 2)), now: now, into: &actions)
      guard dropped > 0 else { return false }
    }
    return true
  }

  /// Drops `count` of the routes `source` gave (peers only it leads to first: forgetting
  /// them is what makes room). - Returns: how many it dropped.
  private mutating func dropRoutes(of source: ConnectionID, count: Int, now: Duration, into actions: inout [SessionAction]) -> Int {
    var chosen: [PeerID] = []
    chosen.reserveCapacity(count)
    for (id, record) in peers where record.session == nil && record.routes.count == 1 && record.routes[source] != nil {
      chosen.append(id)
      if chosen.count == count { break }
    }
    if chosen.count < count {
      for (id, record) in peers where (record.session != nil || record.routes.count > 1) && record.routes[source] != nil {
        chosen.append(id)
        if chosen.count == count { break }
      }
    }
    for id in chosen {
      peers[id]?.routes[source] = nil
      if source == .federation {
        federation.remote[id] = nil
        // The federation announces it again later (refused while there is no room for it).
        actions.append(.federate(.presenceLeftOut(id)))
      }
    }
    if source != .federation { connections[source]?.rosterRoutes -= chosen.count }
    relayStatistics.peersLeftOut += UInt64(chosen.count)
    routesChanged(chosen, from: source, wasDirect: nil, now: now, into: &actions)
    return chosen.count
  }
}

extension SessionStateMachine {
  /// How many peers the session keeps now (at most ``peerBudget``; diagnostics and tests).
  package var knownPeerCount: Int { peers.count }
}
