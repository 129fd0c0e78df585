/// The peers a session keeps, so that no one source fills the room for everybody else.
///
/// A session knows at most ``peerBudget`` peers, and the relay connection whose roster
/// would take it past that is closed. Before, whoever filled the room first kept it: four
/// connections from one host that said they were relays, each naming the 16 384 made-up
/// peers one relay connection may give (each with a key that owns its id: cheap to make),
/// filled a relay's 65 536, and from then on every honest relay whose roster named a new peer
/// was closed with ERROR `resourceExhausted`; a flood of presence on NATS did the same. Now
/// the relay connections from one host (an IPv4 address, an IPv6 /64: the address a
/// connection came from, or the one we reached) name together no more peers than one may
/// (``RosterLimits/perRelay``; a peer takes ``RosterLimits/peers`` from its relays' host),
/// and presence takes at most half of the room. Taking room back from a source that filled
/// it was tried first (commit 0dc8836, reverted): routes dropped from a relay never came
/// back, since a relay sends its whole roster only when the session starts, so an attacker
/// that asked for room and left could ratchet an honest relay's routes down to nothing.
extension SessionStateMachine {
  /// The most peers this session keeps (connected, discovered and reached through relays):
  /// ``RosterLimits/peers`` for a relay, twice that for a peer (its relay's, and those it
  /// found itself).
  var peerBudget: Int { isRelay ? configuration.rosterLimits.peers : 2 * configuration.rosterLimits.peers }

  /// The most peers the relay connections from one host may name together.
  var peersPerHost: Int { isRelay ? configuration.rosterLimits.perRelay : configuration.rosterLimits.peers }

  /// The most peers the federation's presence may give (a federated relay): half the room,
  /// so that its relay connections always have the other half.
  var presenceBudget: Int { peerBudget / 2 }

  /// The host a connection counts against (``ConnectionRecord/source``; `nil` when unknown:
  /// then the connection counts alone).
  func rosterHost(of id: ConnectionID) -> String? { connections[id]?.source }

  /// Peers that the relay connections from `id`'s host other than `id` name.
  func peersNamedByHost(of id: ConnectionID) -> Int {
    guard let host = rosterHost(of: id) else { return 0 }
    var count = 0
    for (other, record) in connections where other != id && record.toRelay && record.source == host { count += record.rosterRoutes }
    return count
  }

  /// How many peers the session keeps now (at most ``peerBudget``; diagnostics and tests).
  package var knownPeerCount: Int { peers.count }
}
