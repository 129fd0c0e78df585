/// Federation (PROTOCOL.md 9.6): relays with a site join each other through NATS.
///
/// To the state machine the federation is one more route, ``ConnectionID/federation``: the
/// peers at other sites, and the known peers that are offline, are reached through it.
/// Rosters list them (with their site, to peers that understand sites), messages to them
/// become ``FederationOutput/publish(_:recipient:online:)`` for the shell, and receipts for
/// their origins ``FederationOutput/report(_:origin:)``. The shell feeds back presence
/// (``federationPeerUpdated(_:publicKey:site:now:into:)``) and what the federation delivers for
/// the peers connected here (``federationReceived(_:for:into:)``). Nothing here does I/O.
///
/// Every peer (relay or not) keeps the sites that rosters give, treats a peer whose site says
/// offline as unreachable for live traffic (messages to it wait at the relays), reports
/// `queued` notices, and sends a receipt again for a copy of a relayed message it already
/// took: a federated relay that restarted delivers again what it had not seen acknowledged.
extension SessionStateMachine {
  /// A relay with a site.
  var isFederated: Bool { isRelay && configuration.federation != nil }

  // MARK: Presence

  /// What became of a peer's presence the federation announced.
  package enum PresenceAnswer: Hashable, Sendable {
    case taken
    /// For good: the key does not own the id (counted as a forgery), the peer is a relay or
    /// us, or this relay is not federated.
    case refused
    /// This relay knows as many peers as it may (``RosterLimits/peers``), or presence gave
    /// half of them: perhaps later.
    case full
  }

  /// The federation says where a peer is (its presence at a site, or that it is offline).
  @discardableResult
  package mutating func federationPeerUpdated(
    _ peer: Peer, publicKey: [UInt8], site: PeerSite, now: Duration, into actions: inout [SessionAction]
  ) -> PresenceAnswer {
    guard isFederated, peer.id != localPeer.id else { return .refused }
    let id = peer.id
    // No more peers than a relay may know, and presence takes at most half of them (its
    // relay connections keep the other half: SessionStateMachine+PeerBudget). Checked
    // first: a peer left out is tried again each second, and this costs no key check.
    // (A peer of ours with a session is in presence too: it takes no room.)
    let taken = federation.remote[id] != nil || peers[id]?.session != nil
    guard taken || ((peers[id] != nil || peers.count < peerBudget) && federation.remote.count < presenceBudget) else { return .full }
    guard configuration.endToEnd.owns(publicKey, peer.id) else {
      relayStatistics.forgeriesDropped += 1
      return .refused
    }
    if peers[id] == nil { peers[id] = PeerRecord(peer: peer) }
    guard peers[id]?.isRelay != true else { return .refused }
    if peers[id]?.publicKey == nil { peers[id]?.publicKey = publicKey }
    if peers[id]?.session == nil, let known = peers[id]?.peer { peers[id]?.peer = known.renamed(peer.name) }
    let hops = site.isOnline ? FederationState.onlineHops : FederationState.offlineHops
    let unchanged = federation.remote[id] == site && peers[id]?.routes[.federation] == hops
    federation.remote[id] = site
    peers[id]?.routes[.federation] = hops
    if !unchanged { routesChanged([id], from: .federation, wasDirect: nil, now: now, into: &actions) }
    return .taken
  }

  /// The federation forgot a peer (offline for longer than messages are kept).
  package mutating func federationPeerRemoved(_ id: PeerID, now: Duration, into actions: inout [SessionAction]) {
    guard federation.remote.removeValue(forKey: id) != nil else { return }
    peers[id]?.routes[.federation] = nil
    routesChanged([id], from: .federation, wasDirect: nil, now: now, into: &actions)
  }

  /// Peers behind the federation, with where they are (a federated relay's view).
  package var federatedPeers: [(peer: Peer, site: PeerSite)] {
    federation.remote.compactMap { id, site in
      guard peers[id]?.session == nil, let peer = peers[id]?.peer else { return nil }
      return (peer, site)
    }.sorted { $0.peer.name.value < $1.peer.name.value }
  }

  /// Where a peer reached through relays is, when a federated relay said (`nil` for a peer
  /// with a session, or one whose relays do not federate).
  package func site(of id: PeerID) -> PeerSite? {
    guard let record = peers[id], record.session == nil else { return nil }
    if record.bestRoute == .federation { return federation.remote[id] }
    return federation.sites[id]
  }

  /// An offline peer: messages to it wait at relays; it is not reachable for live traffic.
  func isOffline(_ id: PeerID) -> Bool { site(of: id)?.isOnline == false }

  // MARK: What the federation delivers

  /// A frame the federation delivered for `recipient`, a peer connected here: a sealed
  /// message for it (checked against its origin's signature, like every message a relay
  /// passes on), or a receipt or report for one of its messages.
  package mutating func federationReceived(_ frame: Frame, for recipient: PeerID, into actions: inout [SessionAction]) -> FederationDelivery {
    guard isFederated else { return .rejected("this relay is not federated") }
    guard let session = peers[recipient]?.session else { return .notHere }
    switch frame {
    case .message(let message):
      guard message.recipients.contains(recipient) else {
        relayStatistics.forgeriesDropped += 1
        return .rejected("a message on \(recipient.shortHex)'s subject that does not list it")
      }
      guard let originKey = peers[message.sender]?.publicKey else { return .unknownOrigin }
      if case .failure(let error) = configuration.endToEnd.verify(message.body, header: EnvelopeHeader(message), originKey: originKey) {
        relayStatistics.forgeriesDropped += 1
        return .rejected("\(error.name): \(error)")
      }
      var forwarded = message
      forwarded.hopLimit = message.hopLimit > 0 ? message.hopLimit - 1 : 0
      relayStatistics.forwardedMessages += 1
      relayStatistics.forwardedBytes += UInt64(message.body.count)
      _ = federation.handedOn.insert(sender: message.sender, id: message.id)
      actions.append(.sendMessage(forwarded, [session]))
      return .handedOn
    case .delivered(let receipt) where receipt.origin == recipient:
      actions.append(.send(session, frame))
      return .handedOn
    case .undeliverable(let report) where report.origin == recipient:
      if report.reason != .queued || remoteSupportsFederation(session) { actions.append(.send(session, frame)) }
      return .handedOn
    default:
      relayStatistics.forgeriesDropped += 1
      return .rejected("a \(frame.type) frame for \(recipient.shortHex) that is not a message to it nor a report to its origin")
    }
  }

  /// The federation did not store a message (full, or unavailable): its origin is told.
  package mutating func federationStoreFailed(origin: PeerID, messageID: UInt64, recipient: PeerID, into actions: inout [SessionAction]) {
    report(.storeFailed, origin: origin, messageID: messageID, recipient: recipient, into: &actions)
  }

  /// A stored message reached the age limit before its recipient connected.
  package mutating func federationExpired(origin: PeerID, messageID: UInt64, recipient: PeerID, into actions: inout [SessionAction]) {
    report(.expired, origin: origin, messageID: messageID, recipient: recipient, into: &actions)
  }

  /// An UNDELIVERABLE written here, toward the message's origin wherever it is.
  private mutating func report(
    _ reason: UndeliverableReason, origin: PeerID, messageID: UInt64, recipient: PeerID, into actions: inout [SessionAction]
  ) {
    guard let target = route(to: origin) else { return }
    let frame = Frame.undeliverable(Frame.Undeliverable(origin: origin, messageID: messageID, recipient: recipient, reason: reason))
    if target == .federation {
      federateReport(frame, origin: origin, vouched: true, into: &actions)
    } else if reason != .queued || connections[target]?.toRelay == true || remoteSupportsFederation(target) {
      actions.append(.send(target, frame))
    }
  }

  // MARK: Outputs (called from forwarding and routing)

  /// A message forwarded to recipients behind the federation: one copy each, on its subject;
  /// an offline recipient's origin hears that it waits (`queued`).
  mutating func federate(_ message: Frame.Message, to recipients: [PeerID], into actions: inout [SessionAction]) {
    for recipient in recipients {
      let online = federation.remote[recipient]?.isOnline ?? false
      actions.append(.federate(.publish(message, recipient: recipient, online: online)))
      if !online { report(.queued, origin: message.sender, messageID: message.id, recipient: recipient, into: &actions) }
    }
  }

  /// A receipt or report for an origin behind the federation. For an origin that presence
  /// calls offline, only one this relay can vouch for: its own reports, and receipts for
  /// stored messages it handed on itself (`FederationState.handedOn`). That view of the
  /// origin lags (its site may only have missed a presence refresh while its relay moved to
  /// another NATS server, its session still waiting for the answer): dropped, the sender
  /// waited for DELIVERED for ever though the message had arrived. The store keeps such a
  /// report for the origin's subject like a queued message, so a peer's made-up reports
  /// for offline origins are not published: they would fill the store that queued messages
  /// need.
  mutating func federateReport(_ frame: Frame, origin: PeerID, vouched: Bool, into actions: inout [SessionAction]) {
    guard vouched || federation.remote[origin]?.isOnline == true else { return }
    actions.append(.federate(.report(frame, origin: origin)))
  }

  /// Whether a receipt a peer sent (on connection `id`) is for stored messages this relay
  /// handed to that peer.
  func isVouchedReceipt(_ frame: Frame, from id: ConnectionID) -> Bool {
    guard case .delivered(let receipt) = frame, receipt.recipient == connection(id, { $0.peerID }) ?? nil, !receipt.ids.isEmpty else {
      return false
    }
    return receipt.ids.allSatisfy { federation.handedOn.contains(sender: receipt.origin, id: $0) }
  }

  /// A receipt from a peer connected here: what of it came from the federation is done.
  mutating func federationNoteReceipt(_ delivered: Frame.Delivered, on id: ConnectionID, into actions: inout [SessionAction]) {
    guard isFederated, delivered.recipient == connection(id, { $0.peerID }) ?? nil else { return }
    actions.append(.federate(.receipted(recipient: delivered.recipient, origin: delivered.origin, ids: delivered.ids)))
  }

  /// A peer (not a relay) began a session here.
  mutating func federationSessionEstablished(_ peer: Peer, publicKey: [UInt8], into actions: inout [SessionAction]) {
    guard isFederated else { return }
    actions.append(.federate(.arrived(peer, publicKey: publicKey)))
  }

  /// A session ended: a peer that is not a relay stays reachable through the federation, as
  /// offline (at this site), until it connects again somewhere.
  /// Within presence's half of the room (sessions with fresh keys, opened and closed in a
  /// loop, each left a peer behind for the week messages are kept, without bound).
  mutating func federationSessionEnded(_ peerID: PeerID, into actions: inout [SessionAction]) {
    guard isFederated, let settings = configuration.federation, peers[peerID]?.isRelay != true, peers[peerID]?.publicKey != nil else { return }
    guard federation.remote[peerID] != nil || federation.remote.count < presenceBudget else {
      actions.append(.federate(.departed(peerID)))
      return
    }
    federation.remote[peerID] = PeerSite(name: settings.site, isOnline: false)
    peers[peerID]?.routes[.federation] = FederationState.offlineHops
    actions.append(.federate(.departed(peerID)))
  }

  // MARK: Rosters with sites

  /// The site a roster entry for `id` carries (when the roster carries sites).
  func rosterSite(_ id: PeerID) -> PeerSite? {
    if peers[id]?.session != nil, let settings = configuration.federation { return PeerSite(name: settings.site, isOnline: true) }
    return site(of: id)
  }

  /// A roster for the peer on `connection`: with sites when we federate and it understands them.
  func roster(_ kind: RosterKind, _ entries: [Frame.Roster.Entry], to connection: ConnectionID) -> Frame.Roster {
    Frame.Roster(kind: kind, entries: entries, carriesSites: isFederated && remoteSupportsFederation(connection))
  }

  /// Whether the peer on a connection said (HELLO) it understands what federated relays send.
  func remoteSupportsFederation(_ id: ConnectionID) -> Bool {
    connection(id, { $0.machine?.remoteHello?.capabilities.contains(.federation) == true }) ?? false
  }

  /// The site of an entry taken from a roster that carries sites (before routes change, so
  /// that offline peers are reported unreachable rather than reachable). Kept while the peer
  /// is known: ``forgetSite(of:)`` drops it with the peer's record.
  mutating func noteSite(of entry: Frame.Roster.Entry, in roster: Frame.Roster) {
    guard roster.carriesSites, let site = entry.site else { return }
    federation.sites[entry.peer.id] = site
  }

  /// The peer's record is gone: so is its site.
  mutating func forgetSite(of id: PeerID) {
    federation.sites[id] = nil
  }

  /// How many peers' sites are known (diagnostics and tests).
  package var knownSiteCount: Int { federation.sites.count }

  // MARK: Receipts sent again

  /// A relayed message the application took: remember it, so that a copy of it gets its
  /// receipt again (also when the connection it came on has closed meanwhile).
  mutating func noteTaken(origin: PeerID, ids: [UInt64], relayed: Bool) {
    guard relayed else { return }
    for id in ids { _ = federation.receipted.insert(sender: origin, id: id) }
  }

  /// A copy of a sealed message we delivered before: when the application took it, the relay
  /// that sent the copy gets the receipt again (it had not seen the first one).
  mutating func acknowledgeCopy(_ message: Frame.Message, on id: ConnectionID, into actions: inout [SessionAction]) {
    guard federation.receipted.contains(sender: message.sender, id: message.id),
      updateConnection(id, { $0.machine?.state == .connected }) == true
    else { return }
    let signature = configuration.endToEnd.signReceipt(origin: message.sender, ids: [message.id])
    actions.append(.send(id, .delivered(Frame.Delivered(origin: message.sender, recipient: localPeer.id, ids: [message.id], signature: signature))))
  }

  /// A relay says one of our messages waits for an offline recipient.
  mutating func noteQueued(_ report: Frame.Undeliverable, into actions: inout [SessionAction]) {
    guard let route = relayPending[report.messageID]?[report.recipient], let peer = peers[report.recipient]?.peer else { return }
    // The relay has the message, stored: our copy need not go again if the session with it
    // resumes (it would only wait, for as long as the recipient stays offline, in the
    // window that holds senders back).
    forgetRelayed(report.messageID, on: route)
    actions.append(.emit(.queued(messageID: MessageID(rawValue: report.messageID), to: peer)))
  }
}
