/// The peers a session keeps, so that whoever fills the room first cannot keep everybody
/// else out.
///
/// A session knows at most ``peerBudget`` peers. Before, the relay connection whose roster
/// would take it past that was closed: four connections that said they were relays, each
/// naming the 16 384 made-up peers one relay connection may give (each with a key that owns
/// its id: cheap to make), filled a relay's 65 536, and from then on every honest relay whose
/// roster named a new peer was closed with ERROR `resourceExhausted`; a flood of presence on
/// NATS did the same. Now, when the room is full, the relay connection whose rosters name the
/// most peers is closed, if it names more than the one asking (else the one asking is). A
/// relay is then not closed while another names more peers than it: a flood has to name
/// fewer peers than it from each of many connections, and pays a reconnection each time one
/// is closed; and a relay that is closed loses nothing for good, since its next session
/// starts with its whole roster. Presence takes at most half of the room.
///
/// Tried and dropped: taking routes back from the source that named the most (commit
/// 0dc8836; a relay sends its whole roster only when a session starts, so routes dropped
/// from it never came back), and a share per host (8267800; one machine on a LAN has several
/// addresses, and every host of an IPv6 LAN is in one /64, so honest relays there shared
/// one share).
extension SessionStateMachine {
  /// The most peers this session keeps (connected, discovered and reached through relays):
  /// ``RosterLimits/peers`` for a relay, twice that for a peer (its relay's, and those it
  /// found itself).
  var peerBudget: Int { isRelay ? configuration.rosterLimits.peers : 2 * configuration.rosterLimits.peers }

  /// The most peers the federation's presence may give (a federated relay): half the room.
  var presenceBudget: Int { peerBudget / 2 }

  /// Makes room for a peer that the roster of `source` names, when the session knows
  /// ``peerBudget`` peers: closes the relay connections whose rosters name the most peers,
  /// largest first, while one names more than `given` (what `source` names so far), until
  /// there is room. Relays whose rosters overlap may all be closed for one new peer (closing
  /// one of them frees nothing while another leads to the same peers): passing over those
  /// was tried, and let two flooders naming the same made-up peers keep the room.
  /// - Returns: whether there is room now (otherwise `source` names the most, and the
  ///   caller closes it).
  mutating func makeRoomByClosingTheLargestRoster(besides source: ConnectionID, given: Int, now: Duration, into actions: inout [SessionAction])
    -> Bool
  {
    while peers.count >= peerBudget {
      var largest: (id: ConnectionID, count: Int)?
      for (id, record) in connections where id != source && record.toRelay && record.rosterRoutes > (largest?.count ?? given) {
        largest = (id, record.rosterRoutes)
      }
      guard let largest else { return false }
      rosterLimitExceeded(
        largest.id, "this session knows as many peers as it may (\(peerBudget)), and this relay's rosters name the most of them (\(largest.count))",
        now: now, into: &actions)
      // Its routes went with its session; counted as none from now on in any case, so that
      // this ends (each pass closes one connection).
      connections[largest.id]?.rosterRoutes = 0
    }
    return true
  }

  /// How many peers the session keeps now (at most ``peerBudget``; diagnostics and tests).
  package var knownPeerCount: Int { peers.count }
}
