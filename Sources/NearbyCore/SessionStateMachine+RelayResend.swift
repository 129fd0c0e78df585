/// Messages on their way through a relay when a session on their path is lost for a moment
/// (PROTOCOL.md 6.5): the sender keeps each sealed copy until every recipient behind the relay
/// answered, and sends it again when its session with the relay resumes, or when a recipient
/// that had become unreachable (its own session with the relay was lost) is reachable again.
/// The relay passes on again what its origin sends again on its own session
/// (``SessionStateMachine/isResentByItsOrigin(_:on:)``), and a recipient that already took
/// it drops the copy and acknowledges it again. So a blip on either side of the relay neither
/// loses a message nor reports it failed; only a relay that stays away past the grace (or ends
/// the session) fails what waited for it, and so does a recipient that stays unreachable
/// past the grace (one whose federation knows it offline keeps waiting, without our copies).
extension SessionStateMachine {
  /// What we sent through one relay and its recipients have not answered yet.
  struct RelayInFlight: Sendable {
    /// The session's connection to the relay (the lost one while it waits to resume).
    var connection: ConnectionID
    /// The sealed messages, oldest first.
    var window: ResendWindow
    /// Recipients whose copies went again when the session resumed: when the relay's
    /// roster makes them reachable again right after, they are not sent a third time.
    var resentOnResume: Set<PeerID> = []
    /// The peers we reached only through this relay when its session was lost: messages to
    /// them wait here (sealed, in the window) until the session resumes, and go then. Kept
    /// until the relay's first full roster after the resume says where they are now.
    var behind: Set<PeerID> = []
    /// When the relay's roster after the resume counts as complete (a full roster may take
    /// several frames): then the peers still behind it, not named, are unreachable.
    var settleAt: Duration?

    init(connection: ConnectionID) {
      self.connection = connection
      window = ResendWindow()
      window.keepsMessages = true
    }
  }

  /// How many sealed messages are kept for relays (diagnostics and tests).
  package var relayCopiesKept: Int { relayInFlight.values.reduce(0) { $0 + $1.window.count } }

  /// A sealed message went to a relay on `route`: kept until its recipients answer, when the
  /// session with the relay can resume.
  mutating func keepRelayed(_ envelope: Frame.Message, on route: ConnectionID) {
    guard let relay = connection(route, { $0.peerID }) ?? nil, reconnection.sessions[relay]?.resumable == true else { return }
    if relayInFlight[relay] == nil || relayInFlight[relay]?.connection != route { relayInFlight[relay] = RelayInFlight(connection: route) }
    relayInFlight[relay]?.window.append(envelope)
  }

  /// The session with `relay` was lost on `route` and waits to resume: the peers reached
  /// only through it (`stranded`) stay addressable, and messages to them wait for the resume.
  mutating func relaySuspended(_ relay: PeerID, on route: ConnectionID, stranding stranded: [PeerID]) {
    // (A relay forwards by its routes only: it keeps nothing for peers behind another relay.)
    guard !isRelay, reconnection.sessions[relay]?.resumable == true else { return }
    if relayInFlight[relay] == nil { relayInFlight[relay] = RelayInFlight(connection: route) }
    for peer in stranded where peers[peer]?.isRelay != true && peers[peer]?.publicKey != nil { relayInFlight[relay]?.behind.insert(peer) }
  }

  /// Where a message to `peer` goes when it has no route of its own: through the relay it was
  /// behind when that relay's session was lost. `live`: the session is back (its roster has
  /// not come yet), else the message waits in the relay's window for the resume.
  func strandedRoute(_ peer: PeerID) -> (relay: PeerID, route: ConnectionID, live: Bool)? {
    guard !relayInFlight.isEmpty else { return nil }
    for (relay, inFlight) in relayInFlight where inFlight.behind.contains(peer) {
      if let session = peers[relay]?.session { return (relay, session, true) }
      if isSuspended(relay) { return (relay, inFlight.connection, false) }
    }
    return nil
  }

  /// Whether `peer` is kept (not forgotten) because messages to it wait for a relay's resume.
  func isStranded(_ peer: PeerID) -> Bool {
    relayInFlight.values.contains { $0.behind.contains(peer) }
  }

  /// A roster names a peer that was behind a relay while it was away: it is where rosters say
  /// from now on. - Returns: the relay it was behind, if it was.
  mutating func unstrand(_ peer: PeerID) -> PeerID? {
    guard !relayInFlight.isEmpty else { return nil }
    var relay: PeerID?
    for key in relayInFlight.keys.sorted() where relayInFlight[key]?.behind.remove(peer) != nil { relay = relay ?? key }
    return relay
  }

  /// A sealed message for peers behind a relay whose session waits to resume: kept, and sent
  /// when the session resumes (``resendRelayed(_:on:into:)``).
  mutating func holdRelayed(_ envelope: Frame.Message, for route: ConnectionID) {
    guard let relay = relayInFlight.first(where: { $0.value.connection == route })?.key else { return }
    relayInFlight[relay]?.window.append(envelope)
  }

  /// How long after the first frame of a full roster the rest of it is waited for.
  package static let rosterSettleDelay = Duration.seconds(1)

  /// A full roster from the relay on `id` (the first after a resume, usually): it and the
  /// frames that follow it within ``rosterSettleDelay`` say where the peers behind the relay
  /// are (each peer they name leaves `behind` as its entry comes: ``unstrand(_:)``).
  mutating func fullRosterCame(on id: ConnectionID, now: Duration) {
    guard let relay = connection(id, { $0.peerID }) ?? nil, relayInFlight[relay]?.connection == id,
      relayInFlight[relay]?.settleAt == nil
    else { return }
    relayInFlight[relay]?.settleAt = now + Self.rosterSettleDelay
  }

  /// Rosters that came after resumes and are complete now: the peers they did not name are
  /// unreachable. And the recipients that a resume's resend skipped have been skipped: from
  /// now on, one that becomes reachable again gets its copies again (a stale entry would skip
  /// that once, and leave them waiting until the next resume).
  mutating func settleRostersAfterResumes(now: Duration, into actions: inout [SessionAction]) {
    guard !relayInFlight.isEmpty else { return }
    for relay in relayInFlight.keys.sorted() {
      guard let settleAt = relayInFlight[relay]?.settleAt, settleAt <= now else { continue }
      relayInFlight[relay]?.settleAt = nil
      relayInFlight[relay]?.resentOnResume = []
      guard let behind = relayInFlight[relay]?.behind, !behind.isEmpty else { continue }
      relayInFlight[relay]?.behind = []
      strandedPeersLost(behind, into: &actions)
    }
  }

  /// Peers that were behind a relay while it was away and have no route now: they are
  /// reported unreachable only now (they were not while messages to them could wait), and
  /// what still waits for their answers has the grace period to see them back.
  mutating func strandedPeersLost(_ stranded: Set<PeerID>, into actions: inout [SessionAction]) {
    for peer in stranded.sorted() where !isStranded(peer) {
      guard let record = peers[peer], record.session == nil, record.routes.isEmpty else { continue }
      if record.announcedReachable {
        peers[peer]?.announcedReachable = false
        actions.append(.emit(.unreachable(record.peer)))
      }
      relayedAway(peer)
      forgetIfIdle(peer)
    }
  }

  /// A recipient reached through a relay answered (or failed). - Returns: whether it was
  /// waiting. Once no recipient of the message waits on that relay, its copy is dropped.
  @discardableResult
  mutating func relayedAnswered(_ messageID: UInt64, by recipient: PeerID) -> Bool {
    guard let route = relayPending[messageID]?.removeValue(forKey: recipient) else { return false }
    if relayPending[messageID]?.isEmpty == true { relayPending[messageID] = nil }
    if relayPending[messageID]?.values.contains(route) != true { forgetRelayed(messageID, on: route) }
    return true
  }

  /// Drops the kept copy of a message sent through the relay on `route`.
  mutating func forgetRelayed(_ messageID: UInt64, on route: ConnectionID) {
    guard let relay = relayInFlight.first(where: { $0.value.connection == route })?.key else { return }
    relayInFlight[relay]?.window.remove(messageID)
  }

  /// Fails every recipient still waiting for a message sent through the relay on `route`.
  mutating func failRelayed(through route: ConnectionID, reason: UndeliveredReason, into actions: inout [SessionAction]) {
    for (messageID, expected) in relayPending {
      for (recipient, via) in expected where via == route {
        relayPending[messageID]?[recipient] = nil
        noteFailed(messageID, recipient, reason, into: &actions)
      }
      if relayPending[messageID]?.isEmpty == true { relayPending[messageID] = nil }
    }
  }

  /// The session with `relay` resumed on `id`: what waited for its recipients is routed
  /// there, and every kept copy goes again, oldest first.
  mutating func resendRelayed(_ relay: PeerID, on id: ConnectionID, into actions: inout [SessionAction]) {
    guard var inFlight = relayInFlight[relay] else { return }
    let former = inFlight.connection
    for (messageID, expected) in relayPending {
      for (recipient, via) in expected where via == former { relayPending[messageID]?[recipient] = id }
    }
    inFlight.connection = id
    inFlight.resentOnResume = []
    let kept = inFlight.window.messages(after: nil)
    for envelope in kept {
      for recipient in envelope.recipients where relayPending[envelope.id]?[recipient] == id { inFlight.resentOnResume.insert(recipient) }
    }
    if !kept.isEmpty { actions.append(.resendMessages(kept, id)) }
    relayInFlight[relay] = inFlight
  }

  /// A peer behind a relay is reachable again, on `route` (after its own session with a
  /// relay was lost, say): the copies still waiting for its answer go again, there, oldest
  /// first, unless the resume of our session with that relay just sent them.
  mutating func resendRelayed(to peer: PeerID, via route: ConnectionID, into actions: inout [SessionAction]) {
    guard !relayInFlight.isEmpty else { return }
    var resend: [Frame.Message] = []
    for relay in relayInFlight.keys {
      guard let inFlight = relayInFlight[relay] else { continue }
      if inFlight.connection == route, relayInFlight[relay]?.resentOnResume.remove(peer) != nil { continue }
      for envelope in inFlight.window.messages(after: nil) where relayPending[envelope.id]?[peer] != nil { resend.append(envelope) }
    }
    var again: [Frame.Message] = []
    defer { if !again.isEmpty { actions.append(.resendMessages(again, route)) } }
    for envelope in resend.sorted(by: { SerialNumber.isAtOrBefore($0.id, $1.id) && $0.id != $1.id }) {
      guard let former = relayPending[envelope.id]?[peer] else { continue }
      if former != route {
        // Reachable through another relay now: the copy is kept for that one.
        relayPending[envelope.id]?[peer] = route
        keepRelayed(envelope, on: route)
        if relayPending[envelope.id]?.values.contains(former) != true { forgetRelayed(envelope.id, on: former) }
      }
      again.append(envelope)
    }
  }

  /// A recipient behind a relay became unreachable: if messages of ours wait for its
  /// answer, it has the grace period (``Configuration/reconnectGrace``) to be back.
  mutating func relayedAway(_ peer: PeerID) {
    guard relayPending.values.contains(where: { $0[peer] != nil }) else { return }
    relayedAwayNoticed.insert(peer)
  }

  /// It is reachable again (what waited for it goes again: ``resendRelayed(to:via:into:)``).
  mutating func relayedBack(_ peer: PeerID) {
    relayedAwayNoticed.remove(peer)
    relayedAwayDeadlines[peer] = nil
  }

  /// Recipients unreachable for the whole grace: what waits for their answers fails, unless
  /// a federation knows the recipient offline (it stores such messages and delivers them when
  /// the recipient is back, 9.6), when only our copies of them go.
  mutating func runRelayedAway(now: Duration, into actions: inout [SessionAction]) {
    settleRostersAfterResumes(now: now, into: &actions)
    guard !relayedAwayNoticed.isEmpty || !relayedAwayDeadlines.isEmpty else { return }
    for peer in relayedAwayNoticed { relayedAwayDeadlines[peer] = now + configuration.reconnectGrace }
    relayedAwayNoticed = []
    for (peer, deadline) in relayedAwayDeadlines where deadline <= now {
      relayedAwayDeadlines[peer] = nil
      guard peers[peer]?.announcedReachable != true else { continue }
      let waiting = relayPending.keys.filter { relayPending[$0]?[peer] != nil }.sorted { SerialNumber.isAtOrBefore($0, $1) && $0 != $1 }
      if isOffline(peer) {
        for messageID in waiting {
          guard let route = relayPending[messageID]?[peer] else { continue }
          let others = relayPending[messageID]?.filter { $0.key != peer && $0.value == route && !isOffline($0.key) } ?? [:]
          if others.isEmpty { forgetRelayed(messageID, on: route) }
        }
        continue
      }
      let name = peers[peer]?.peer.name.value ?? "the peer"
      let reason = UndeliveredReason.connectionClosed(
        .notResumed("\(name) was not reachable through any relay again within \(configuration.reconnectGrace.formattedSeconds)"))
      for messageID in waiting where relayedAnswered(messageID, by: peer) { noteFailed(messageID, peer, reason, into: &actions) }
    }
  }

  /// A session that waited to resume ended: what waited on its relay fails.
  mutating func relaySuspensionEnded(_ relay: PeerID, reason: DisconnectReason, into actions: inout [SessionAction]) {
    guard let inFlight = relayInFlight.removeValue(forKey: relay) else { return }
    failRelayed(through: inFlight.connection, reason: .connectionClosed(reason), into: &actions)
    strandedPeersLost(inFlight.behind, into: &actions)
  }

  /// The relays' kept copies that are over the resend window's limit: a sender whose message
  /// goes through one of them waits (the recipients behind it answer too slowly).
  func fullRelayWindows(_ routing: Routing) -> [PeerID] {
    guard !relayInFlight.isEmpty else { return [] }
    var full: [PeerID] = []
    for route in Set(routing.relayed.values) {
      if let (relay, inFlight) = relayInFlight.first(where: { $0.value.connection == route }),
        inFlight.window.byteCount >= configuration.resendWindowBytes
      {
        full.append(relay)
      }
    }
    return full.sorted()
  }

  /// Whether the copies kept for `relay` leave room for more.
  func relayWindowHasRoom(_ relay: PeerID) -> Bool {
    (relayInFlight[relay]?.window.byteCount ?? 0) < configuration.resendWindowBytes
  }

  /// A relay: whether `message`, already passed on once, comes again from its origin on the
  /// origin's own session (it resent it after the session resumed: the first copy or its
  /// receipt may have been lost with the connection). Such a copy is passed on again; copies
  /// from anywhere else (another relay: a loop) are dropped.
  mutating func isResentByItsOrigin(_ message: Frame.Message, on id: ConnectionID) -> Bool {
    updateConnection(id, { $0.peerID }) == message.sender && updatePeer(message.sender, { $0.session }) == id
  }
}
