// One file: invitations answered, messages sent, routed, acknowledged and settled form one
// flow through the same bookkeeping (unacked windows, relay pending, seen ids); reading it
// in one place is how the exactly-once rules are checked.

extension SessionStateMachine {
  // MARK: Answering invitations

  /// Accepts the pending invitation on `connection`.
  package mutating func accept(_ connection: ConnectionID, now: Duration, into actions: inout [SessionAction]) {
    guard pendingInvitations.contains(where: { $0.connection == connection }) else {
      actions.append(.emit(.error(.rejected("that invitation is no longer pending"))))
      return
    }
    answer(connection, accept: true, now: now, into: &actions)
  }

  /// Accepts the oldest pending invitation from `peer`.
  package mutating func accept(peer: PeerID, now: Duration, into actions: inout [SessionAction]) {
    guard let invitation = pendingInvitations.first(where: { $0.peer.id == peer }) else {
      actions.append(.emit(.error(.rejected("no pending invitation from \(peers[peer]?.peer.description ?? peer.hex)"))))
      return
    }
    answer(invitation.connection, accept: true, now: now, into: &actions)
  }

  /// Declines the oldest pending invitation from `peer`.
  package mutating func decline(peer: PeerID, now: Duration, into actions: inout [SessionAction]) {
    guard let invitation = pendingInvitations.first(where: { $0.peer.id == peer }) else {
      actions.append(.emit(.error(.rejected("no pending invitation from \(peers[peer]?.peer.description ?? peer.hex)"))))
      return
    }
    answer(invitation.connection, accept: false, now: now, into: &actions)
  }

  // MARK: Leaving

  /// Ends the session with one peer (GOODBYE `leaving`), or withdraws our invitation to it.
  package mutating func leave(_ peerID: PeerID, now: Duration, into actions: inout [SessionAction]) {
    autoConnect[peerID] = nil
    resumable[peerID] = nil
    if isSuspended(peerID) {
      endSuspendedSession(peerID, reason: .local(.leaving), now: now, into: &actions)
      return
    }
    guard let record = peers[peerID], let id = record.session ?? record.outbound else {
      actions.append(.emit(.error(.rejected("not connected to \(peers[peerID]?.peer.description ?? peerID.hex)"))))
      return
    }
    if connections[id]?.machine == nil {
      connections[id] = nil
      peers[peerID]?.outbound = nil
      actions.append(.close(id, .now))
      actions.append(.emit(.disconnected(record.peer, .local(.leaving))))
      return
    }
    let transition = connections[id]!.machine!.goodbye(.leaving, now: now)
    perform(transition, on: id, now: now, into: &actions)
  }

  /// Says goodbye on every connection and declines every pending invitation. New
  /// invitations and connections are refused from now on.
  package mutating func shutdown(now: Duration, into actions: inout [SessionAction]) {
    isShuttingDown = true
    for peerID in reconnection.sessions.keys.sorted() where isSuspended(peerID) {
      endSuspendedSession(peerID, reason: .local(.shuttingDown), now: now, into: &actions)
    }
    for id in connections.keys.sorted() {
      guard let machine = connections[id]?.machine else {
        connections[id] = nil
        actions.append(.close(id, .now))
        continue
      }
      let transition: ConnectionTransition
      if case .invited = machine.state {
        connections[id]!.awaitingAnswer = false
        pendingInvitations.removeAll { $0.connection == id }
        transition = connections[id]!.machine!.decline(.shuttingDown, now: now)
      } else {
        transition = connections[id]!.machine!.goodbye(.shuttingDown, now: now)
      }
      perform(transition, on: id, now: now, into: &actions)
    }
  }

  // MARK: Messages

  /// Where a message to some recipients goes right now.
  package struct Routing {
    /// The connections to queue it on, in order (direct sessions and relay routes).
    package var targets: [ConnectionID] = []
    /// The direct sessions that get the message as it is (the channel protects it).
    var direct: [ConnectionID] = []
    /// Recipients reached through a relay, with the relay's connection.
    var relayed: [PeerID: ConnectionID] = [:]
    /// Those of `relayed` behind a relay whose session waits to resume: their connection is
    /// the lost one, and the message waits for the resume (it is not among the targets).
    var held: Set<ConnectionID> = []
    /// Named recipients that cannot be reached.
    var unreachable: [PeerID] = []
    /// The recipients that will answer (direct peers that are not relays, then relayed ones).
    var expected: [PeerID] = []
    /// The recipients written in the message (empty: everyone).
    var addressed: [PeerID] = []
    /// The targets whose peer answers itself (a direct session with a peer that is not a relay).
    var answering: [ConnectionID] = []
    /// Peers whose session waits to resume (PROTOCOL.md 6.5): the message waits in their
    /// resend window and goes out when the session is back.
    package var suspended: [PeerID] = []
  }

  /// Where a message to `recipients` would go now. - Throws: when nobody can be reached.
  ///
  /// `mutating` only to read the records in place (it changes nothing): this runs for every
  /// message sent.
  package mutating func routing(_ recipients: Recipients) throws(SendError) -> Routing {
    var routing = Routing()
    if let route = directRoute(recipients) {
      // One peer with a session of its own, the usual case: what the loops below would
      // find, in arrays that share their storage (one allocation instead of six).
      let connection = [route.connection]
      routing.addressed = route.recipients
      routing.direct = connection
      routing.targets = connection
      routing.expected = route.recipients
      routing.answering = connection
      return routing
    }
    switch recipients {
    case .all:
      // Everyone: every peer with a session (relays are not chat participants), and every
      // peer reached through a relay, sealed end to end (its key came with the roster).
      for (peerID, record) in peers where peerID != localPeer.id && !record.isRelay {
        if let id = record.session {
          routing.direct.append(id)
        } else if isSuspended(peerID) {
          routing.suspended.append(peerID)
        } else if let route = record.bestRoute, record.publicKey != nil, !isOffline(peerID) {
          routing.relayed[peerID] = route
        } else if record.publicKey != nil, !isOffline(peerID), let stranded = strandedRoute(peerID) {
          routing.relayed[peerID] = stranded.route
          if !stranded.live { routing.held.insert(stranded.route) }
        }
      }
      routing.direct.sort()
      routing.suspended.sort()
      routing.targets = routing.direct
      for route in Set(routing.relayed.values).sorted() where !routing.targets.contains(route) && !routing.held.contains(route) {
        routing.targets.append(route)
      }
      if routing.targets.isEmpty && routing.suspended.isEmpty && routing.held.isEmpty { throw .notConnected([]) }
    case .peers(let ids):
      var unique: [PeerID] = []
      for id in ids where !unique.contains(id) { unique.append(id) }
      if unique.isEmpty { throw .noRecipients }
      guard unique.count <= ProtocolLimits.maximumRecipients else {
        throw .tooManyRecipients(count: unique.count, limit: ProtocolLimits.maximumRecipients)
      }
      routing.addressed = unique
      for peerID in unique {
        if let id = peers[peerID]?.session {
          if !routing.direct.contains(id) { routing.direct.append(id) }
          if !routing.targets.contains(id) { routing.targets.append(id) }
        } else if isSuspended(peerID), peers[peerID]?.isRelay != true {
          routing.suspended.append(peerID)
        } else if let route = peers[peerID]?.bestRoute, peers[peerID]?.publicKey != nil {
          routing.relayed[peerID] = route
          if !routing.targets.contains(route) { routing.targets.append(route) }
        } else if peers[peerID]?.publicKey != nil, let stranded = strandedRoute(peerID) {
          // Behind a relay that is away for a moment: the message waits for it.
          routing.relayed[peerID] = stranded.route
          if stranded.live {
            if !routing.targets.contains(stranded.route) { routing.targets.append(stranded.route) }
          } else {
            routing.held.insert(stranded.route)
          }
        } else {
          routing.unreachable.append(peerID)
        }
      }
      if routing.targets.isEmpty && routing.suspended.isEmpty && routing.held.isEmpty { throw .notConnected(routing.unreachable) }
    }
    for id in routing.direct {
      // A direct session expects an acknowledgement from its peer (relays do not consume).
      guard let peerID = updateConnection(id, { $0.peerID }) ?? nil, updatePeer(peerID, { $0.isRelay }) != true else { continue }
      if !routing.addressed.isEmpty, !routing.addressed.contains(peerID) { continue }
      routing.expected.append(peerID)
      routing.answering.append(id)
    }
    routing.expected += routing.suspended
    routing.expected += routing.relayed.keys.sorted()
    return routing
  }

  /// A session of our own with one peer that answers for itself (not a relay): where a
  /// message to that peer alone goes, the usual case, sent with
  /// ``sendMessage(_:direct:timestamp:now:)`` without building a ``Routing``.
  package struct DirectRoute: Sendable {
    /// The recipients as the caller wrote them (one peer): the message carries this array.
    package let recipients: [PeerID]
    package let connection: ConnectionID
    package var peer: PeerID { recipients[0] }
  }

  /// The direct route of a message to `recipients`, when it is one peer we have a session
  /// with and that is not a relay; `nil` otherwise (then ``routing(_:)`` says where it goes).
  package mutating func directRoute(_ recipients: Recipients) -> DirectRoute? {
    guard case .peers(let ids) = recipients, ids.count == 1, let session = updatePeer(ids[0], { $0.isRelay ? nil : $0.session }) ?? nil,
      updateConnection(session, { $0.peerID }) == ids[0]
    else { return nil }
    return DirectRoute(recipients: ids, connection: session)
  }

  /// Whether the peer's resend window is full (wait until it acknowledges, then send).
  package mutating func windowIsFull(_ route: DirectRoute) -> Bool {
    let limit = configuration.resendWindowBytes
    return updateConnection(route.connection, { $0.unacked.keepsMessages && $0.unacked.byteCount >= limit }) ?? false
  }

  /// Sends `body` on a direct route: what ``sendMessage(_:routing:timestamp:now:into:)``
  /// does for a routing to that one peer, without the routing and without an action (the
  /// shell queues the returned message on `route.connection` itself, and reports a failure
  /// to queue it with ``sendFailed(messageID:on:reason:into:)``).
  package mutating func sendMessage(_ body: [UInt8], direct route: DirectRoute, timestamp: UInt64, now: Duration) -> (
    id: MessageID, message: Frame.Message
  ) {
    let messageID = nextMessageID
    nextMessageID &+= 1
    let message = Frame.Message(id: messageID, sender: localPeer.id, timestamp: timestamp, recipients: route.recipients, body: body)
    updateConnection(route.connection) { record in
      record.machine?.noteSent(now: now)
      record.unacked.append(message)
    }
    // One recipient that answers: never complete yet, so there is no report to give.
    _ = ledger.record(messageID, answering: route.recipients)
    return (MessageID(rawValue: messageID), message)
  }

  /// Every peer one of our messages was for, as it was sent (each answers: delivered, or
  /// undelivered with a reason), until all have answered; `nil` when it is not ours, or all
  /// have answered.
  package func recipients(of id: MessageID) -> [Peer]? {
    // A peer forgotten since (it left at once) is named by its id: eight hex digits are a
    // valid display name.
    ledger.recipients(id.rawValue)?.map { peerID in peers[peerID]?.peer ?? Peer(id: peerID, name: try! DisplayName(peerID.shortHex)) }
  }

  /// The peers a message to `recipients` would reach now and that would answer.
  package mutating func expectedRecipients(_ recipients: Recipients) -> [Peer] {
    guard let routing = try? routing(recipients) else { return [] }
    return routing.expected.compactMap { peers[$0]?.peer }
  }

  /// Sends `body` to connected peers (and peers reached through relays).
  /// - Returns: the message id and the peers it is expected to reach (each answers, and the
  ///   ``DeliveryLedger`` settles the message once all have). A named peer that cannot be
  ///   reached is reported undelivered (`notConnected`) while the others still get it.
  /// - Throws: ``SendError`` when nothing can be sent (nobody reachable, too large, ...).
  @discardableResult
  package mutating func sendMessage(
    _ body: [UInt8], to recipients: Recipients, timestamp: UInt64, now: Duration, into actions: inout [SessionAction]
  ) throws(SendError) -> (id: MessageID, recipients: [PeerID]) {
    guard body.count <= ProtocolLimits.maximumBodyLength else {
      throw .bodyTooLarge(byteCount: body.count, limit: ProtocolLimits.maximumBodyLength)
    }
    return try sendMessage(body, routing: try routing(recipients), timestamp: timestamp, now: now, into: &actions)
  }

  /// Sends `body` where ``routing(_:)`` said (for a shell that looked at the targets first).
  @discardableResult
  package mutating func sendMessage(
    _ body: [UInt8], routing: Routing, timestamp: UInt64, now: Duration, into actions: inout [SessionAction]
  ) throws(SendError) -> (id: MessageID, recipients: [PeerID]) {
    guard body.count <= ProtocolLimits.maximumBodyLength else {
      throw .bodyTooLarge(byteCount: body.count, limit: ProtocolLimits.maximumBodyLength)
    }
    let messageID = nextMessageID
    nextMessageID &+= 1
    let message = Frame.Message(id: messageID, sender: localPeer.id, timestamp: timestamp, recipients: routing.addressed, body: body)
    // (The connections that answer are among the targets.)
    for id in routing.targets {
      let answers = routing.answering.contains(id)
      updateConnection(id) { record in
        record.machine?.noteSent(now: now)
        if answers { record.unacked.append(message) }
      }
    }
    for peerID in routing.suspended { reconnection.sessions[peerID]?.suspension?.window.append(message) }
    var failures = routing.unreachable.map { DeliveryFailure(peerID: $0, peer: peers[$0]?.peer, reason: .notConnected) }
    // Through each relay: one envelope for the recipients behind it, which only they can
    // open and nobody but us can have written.
    var sealed: [(Frame.Message, ConnectionID)] = []
    var relayed = routing.relayed
    for route in routing.relayed.isEmpty ? [] : Set(routing.relayed.values).sorted() {
      let recipients = routing.relayed.filter { $0.value == route }.map(\.key).sorted()
      let header = EnvelopeHeader(origin: localPeer.id, messageID: messageID, timestamp: timestamp, recipients: recipients)
      let keys = recipients.map { peers[$0]?.publicKey ?? [] }
      switch configuration.endToEnd.seal(body, header: header, toEveryone: routing.addressed.isEmpty, recipientKeys: keys) {
      case .success(let envelope):
        sealed.append((Frame.Message(id: messageID, sender: localPeer.id, timestamp: timestamp, recipients: recipients, body: envelope), route))
      case .failure(let error):
        for recipient in recipients {
          relayed[recipient] = nil
          failures.append(DeliveryFailure(peerID: recipient, peer: peers[recipient]?.peer, reason: .sealingFailed(error.description)))
        }
      }
    }
    if !relayed.isEmpty { relayPending[messageID] = relayed }
    for failure in failures {
      actions.append(
        .emit(.error(.undelivered(messageID: MessageID(rawValue: messageID), peer: failure.peer, peerID: failure.peerID, reason: failure.reason))))
    }
    let expected = routing.relayed.isEmpty ? routing.expected : routing.expected.filter { relayed[$0] != nil || routing.relayed[$0] == nil }
    if let report = ledger.record(messageID, answering: expected, failures: failures), reportsSettlements {
      actions.append(.settled(report))
    }
    if !routing.direct.isEmpty { actions.append(.sendMessage(message, routing.direct)) }
    for (envelope, route) in sealed {
      if routing.held.contains(route) {
        holdRelayed(envelope, for: route)
      } else {
        keepRelayed(envelope, on: route)
        actions.append(.sendMessage(envelope, [route]))
      }
    }
    return (MessageID(rawValue: messageID), expected)
  }

  /// The connections a message to `recipients` would be queued on (for a shell that waits
  /// until they have room before sending).
  package func connections(for recipients: Recipients) -> [ConnectionID] {
    var result: [ConnectionID] = []
    switch recipients {
    case .all:
      for (peerID, record) in peers where peerID != localPeer.id && !record.isRelay {
        if let id = record.session {
          if !result.contains(id) { result.append(id) }
        } else if let route = record.bestRoute, record.publicKey != nil, !isOffline(peerID), !result.contains(route) {
          result.append(route)
        }
      }
    case .peers(let ids):
      for id in ids {
        if let route = peers[id]?.session ?? peers[id]?.bestRoute, !result.contains(route) { result.append(route) }
      }
    }
    return result
  }

  /// The shell could not queue a message on a connection (its queue is full).
  package mutating func sendFailed(messageID: UInt64, on id: ConnectionID, reason: UndeliveredReason, into actions: inout [SessionAction]) {
    if connections[id]?.unacked.remove(messageID) == true, let peerID = connections[id]?.peerID {
      noteFailed(messageID, peerID, reason, into: &actions)
    }
    // Peers reached through that connection (a relay) do not get it either.
    for (recipient, route) in relayPending[messageID] ?? [:] where route == id {
      relayPending[messageID]?[recipient] = nil
      noteFailed(messageID, recipient, reason, into: &actions)
    }
    if relayPending[messageID]?.isEmpty == true { relayPending[messageID] = nil }
    forgetRelayed(messageID, on: id)
  }

  /// Whether any message of ours waits for an answer.
  package var hasPendingDeliveries: Bool { ledger.pendingMessages > 0 }

  /// What became of one of our messages (`nil`: not ours, or forgotten long ago).
  package func deliveryReport(_ id: MessageID) -> DeliveryReport? { ledger.report(id.rawValue) }

  /// A recipient confirmed one of our messages: report it and settle it in the ledger.
  mutating func noteDelivered(_ messageID: UInt64, _ peer: Peer, into actions: inout [SessionAction]) {
    actions.append(.emit(.delivered(messageID: MessageID(rawValue: messageID), to: peer)))
    if ledger.delivered(messageID), reportsSettlements, let report = ledger.report(messageID) { actions.append(.settled(report)) }
  }

  /// A recipient will not get one of our messages: report it and settle it in the ledger.
  mutating func noteFailed(_ messageID: UInt64, _ peerID: PeerID, _ reason: UndeliveredReason, into actions: inout [SessionAction]) {
    let peer = peers[peerID]?.peer
    actions.append(.emit(.error(.undelivered(messageID: MessageID(rawValue: messageID), peer: peer, peerID: peerID, reason: reason))))
    if ledger.failed(messageID, DeliveryFailure(peerID: peerID, peer: peer, reason: reason)), reportsSettlements,
      let report = ledger.report(messageID)
    {
      actions.append(.settled(report))
    }
  }

  mutating func deliver(_ message: Frame.Message, on id: ConnectionID, now: Duration, into actions: inout [SessionAction]) {
    // An envelope: written by someone else and passed on by a relay, or, at a relay, sent by
    // its origin for peers behind us. Anything else is direct.
    let forOthers = isRelay && !message.recipients.isEmpty && !message.recipients.contains(localPeer.id)
    guard message.sender == updateConnection(id, { $0.peerID }) ?? nil, !forOthers else {
      deliverRelayed(message, on: id, now: now, into: &actions)
      return
    }
    // Direct: the channel authenticated it, and its body is the message.
    guard message.body.count <= ProtocolLimits.maximumBodyLength else {
      let transition = connections[id]!.machine!.reject(
        .malformedFrame, "a MESSAGE body of \(message.body.count) bytes is longer than \(ProtocolLimits.maximumBodyLength)", now: now)
      perform(transition, on: id, now: now, into: &actions)
      return
    }
    // A copy of a message received before its session's connection was lost is dropped.
    guard admitDirect(message, on: id, into: &actions) else { return }
    // (A relay keeps direct messages out of its memory of forwarded ones: the same id may
    // come sealed next, for the peers behind it.)
    if deduplicates, !isRelay, !seen.insert(sender: message.sender, id: message.id) {
      relayStatistics.duplicatesDropped += 1
      return
    }
    if message.isPrivate, !message.recipients.contains(localPeer.id) {
      let report = Frame.Undeliverable(origin: message.sender, messageID: message.id, recipient: message.recipients[0], reason: .notForMe)
      actions.append(.send(id, .undeliverable(report)))
      return
    }
    guard let from = updatePeer(message.sender, { $0.peer }) else { return }
    let received = ReceivedMessage(
      id: MessageID(rawValue: message.id), from: from, isPrivate: message.isPrivate, timestamp: message.timestamp, body: message.body)
    actions.append(.deliver(received, from: id))
  }

  /// A message a relay passed on: it is delivered (or, by a relay, forwarded) only once its
  /// origin's signature checks out with the origin's key, so a relay can neither alter nor
  /// invent messages, nor make a real one look like a copy by sending a forgery first.
  private mutating func deliverRelayed(_ message: Frame.Message, on id: ConnectionID, now: Duration, into actions: inout [SessionAction]) {
    func tampered(_ detail: String) {
      relayStatistics.forgeriesDropped += 1
      reportTampering(on: id, origin: message.sender, detail: detail, now: now, into: &actions)
    }
    guard let originKey = peerRecord(message.sender, { $0.publicKey }) ?? nil else {
      tampered("no key is known for its origin: it names a peer no roster has announced")
      return
    }
    let header = EnvelopeHeader(message)
    if isRelay {
      if case .failure(let error) = configuration.endToEnd.verify(message.body, header: header, originKey: originKey) {
        tampered("\(error.name): \(error)")
        return
      }
      guard seen.insert(sender: message.sender, id: message.id) || isResentByItsOrigin(message, on: id) else {
        relayStatistics.duplicatesDropped += 1
        return
      }
      forward(message, from: id, into: &actions)
      return
    }
    let opened: OpenedEnvelope
    switch configuration.endToEnd.open(message.body, header: header, originKey: originKey) {
    case .success(let envelope): opened = envelope
    case .failure(let error):
      tampered("\(error.name): \(error)")
      return
    }
    // A step of a file transfer: the transfer tells copies apart by offset, and acknowledges itself.
    if opened.isFileTransfer {
      transferEnvelopeOpened(opened.body, from: message.sender, via: id, into: &actions)
      return
    }
    guard seen.insert(sender: message.sender, id: message.id) else {
      relayStatistics.duplicatesDropped += 1
      acknowledgeCopy(message, on: id, into: &actions)
      return
    }
    guard let from = peerRecord(message.sender, { $0.peer }) else { return }
    let received = ReceivedMessage(
      id: MessageID(rawValue: message.id), from: from, isPrivate: !opened.toEveryone, timestamp: message.timestamp, body: opened.body)
    actions.append(.deliver(received, from: id))
  }

  mutating func acknowledged(_ delivered: Frame.Delivered, on id: ConnectionID, now: Duration, into actions: inout [SessionAction]) {
    guard delivered.origin == localPeer.id else {
      federationNoteReceipt(delivered, on: id, into: &actions)
      routeTowardOrigin(delivered.origin, .delivered(delivered), from: id, into: &actions)
      return
    }
    guard let peer = updatePeer(delivered.recipient, { $0.peer }) else { return }
    if delivered.recipient != updateConnection(id, { $0.peerID }) ?? nil {
      // Passed on by a relay: only the recipient's signature makes it a receipt.
      let key = peers[delivered.recipient]?.publicKey ?? []
      guard let signature = delivered.signature,
        configuration.endToEnd.isValidReceipt(signature, origin: localPeer.id, recipient: delivered.recipient, ids: delivered.ids, recipientKey: key)
      else {
        relayStatistics.forgeriesDropped += 1
        let detail = delivered.signature == nil ? "a receipt without the recipient's signature" : "a receipt whose signature is not the recipient's"
        reportTampering(on: id, origin: delivered.recipient, detail: detail, now: now, into: &actions)
        return
      }
    }
    // The session's record, found once for the whole batch (nothing below adds or removes connections).
    let direct = (updatePeer(delivered.recipient, { $0.session }) ?? nil).flatMap { connections.index(forKey: $0) }
    for messageID in delivered.ids {
      if let direct, connections.values[direct].unacked.remove(messageID) {
        noteDelivered(messageID, peer, into: &actions)
      } else if relayedAnswered(messageID, by: delivered.recipient) {
        noteDelivered(messageID, peer, into: &actions)
      }
    }
  }

  /// The application has taken these messages: acknowledge them to their origins (one
  /// DELIVERED per connection and origin, split at the protocol's limit). Messages whose
  /// connection has closed meanwhile are not acknowledged (the sender reports them failed).
  package mutating func acknowledge(_ taken: [TakenMessage], now: Duration, into actions: inout [SessionAction]) {
    guard !taken.isEmpty else { return }
    // Usually every message of a batch is from one connection and one origin.
    var groups: [(connection: ConnectionID, origin: PeerID, ids: [UInt64])] = []
    for message in taken {
      if let last = groups.indices.last, groups[last].connection == message.connection, groups[last].origin == message.origin {
        groups[last].ids.append(message.id)
      } else if let index = groups.firstIndex(where: { $0.connection == message.connection && $0.origin == message.origin }) {
        groups[index].ids.append(message.id)
      } else {
        groups.append((message.connection, message.origin, [message.id]))
      }
    }
    for group in groups {
      // A receipt that a relay carries back is signed, so that the origin can trust it.
      noteTaken(origin: group.origin, ids: group.ids, relayed: updateConnection(group.connection, { $0.peerID }) ?? nil != group.origin)
      // A resumed session acknowledges on its current connection; while it has none, once
      // it is back.
      guard let route = acknowledgementRoute(group.connection, origin: group.origin, last: group.ids[group.ids.count - 1]) else {
        noteTakenWhileAway(origin: group.origin, ids: group.ids)
        continue
      }
      guard updateConnection(route, { $0.machine?.state == .connected }) == true else { continue }
      let relayed = updateConnection(route, { $0.peerID }) ?? nil != group.origin
      sendDelivered(group.ids, of: group.origin, on: route, signed: relayed, now: now, into: &actions)
    }
  }

  /// DELIVERED frames for `ids` of `origin` on `route`, as many as the id limit of a frame
  /// asks; `signed` for a receipt that a relay carries back (the origin must trust it).
  mutating func sendDelivered(
    _ ids: [UInt64], of origin: PeerID, on route: ConnectionID, signed: Bool, now: Duration, into actions: inout [SessionAction]
  ) {
    var start = 0
    while start < ids.count {
      let end = min(start + ProtocolLimits.maximumDeliveredIDs, ids.count)
      let part = Array(ids[start..<end])
      let signature = signed ? configuration.endToEnd.signReceipt(origin: origin, ids: part) : nil
      actions.append(.send(route, .delivered(Frame.Delivered(origin: origin, recipient: localPeer.id, ids: part, signature: signature))))
      start = end
    }
    updateConnection(route) { $0.machine?.noteSent(now: now) }
  }

  /// In-place access to a connection's record. (Mutating through `connections[id]` moves the
  /// record into an `Optional` and back, and reading through it copies the whole record:
  /// on the per-message path, that copying was a tenth of the CPU time.)
  @inline(__always) @discardableResult
  mutating func updateConnection<R>(_ id: ConnectionID, _ body: (inout ConnectionRecord) -> R) -> R? {
    guard let index = connections.index(forKey: id) else { return nil }
    return body(&connections.values[index])
  }

  /// In-place access to a peer's record: to read one part of it on the per-message paths too
  /// (a dictionary's getter copies the whole value, a retain and a release of each of its
  /// fields, even to read one of them).
  @inline(__always) @discardableResult
  mutating func updatePeer<R>(_ id: PeerID, _ body: (inout PeerRecord) -> R) -> R? {
    guard let index = peers.index(forKey: id) else { return nil }
    return body(&peers.values[index])
  }

  /// Reads one part of a connection's record (the getter copies the record: on the
  /// per-message paths, read through ``updateConnection(_:_:)``).
  @inline(__always)
  func connection<R>(_ id: ConnectionID, _ read: (borrowing ConnectionRecord) -> R) -> R? {
    guard let index = connections.index(forKey: id) else { return nil }
    return read(connections.values[index])
  }

  /// Reads one part of a peer's record (the getter copies the record: on the per-message
  /// paths, read through ``updatePeer(_:_:)``).
  @inline(__always)
  func peerRecord<R>(_ id: PeerID, _ read: (borrowing PeerRecord) -> R) -> R? {
    guard let index = peers.index(forKey: id) else { return nil }
    return read(peers.values[index])
  }

}
