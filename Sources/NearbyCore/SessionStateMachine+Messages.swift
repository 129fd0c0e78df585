extension SessionStateMachine {
  // MARK: Answering invitations

  /// Accepts the pending invitation on `connection`.
  public mutating func accept(_ connection: ConnectionID, now: Duration, into actions: inout [SessionAction]) {
    guard pendingInvitations.contains(where: { $0.connection == connection }) else {
      actions.append(.emit(.error(.rejected("that invitation is no longer pending"))))
      return
    }
    answer(connection, accept: true, now: now, into: &actions)
  }

  /// Accepts the oldest pending invitation from `peer`.
  public mutating func accept(peer: PeerID, now: Duration, into actions: inout [SessionAction]) {
    guard let invitation = pendingInvitations.first(where: { $0.peer.id == peer }) else {
      actions.append(.emit(.error(.rejected("no pending invitation from \(peers[peer]?.peer.description ?? peer.hex)"))))
      return
    }
    answer(invitation.connection, accept: true, now: now, into: &actions)
  }

  /// Declines the oldest pending invitation from `peer`.
  public mutating func decline(peer: PeerID, now: Duration, into actions: inout [SessionAction]) {
    guard let invitation = pendingInvitations.first(where: { $0.peer.id == peer }) else {
      actions.append(.emit(.error(.rejected("no pending invitation from \(peers[peer]?.peer.description ?? peer.hex)"))))
      return
    }
    answer(invitation.connection, accept: false, now: now, into: &actions)
  }

  // MARK: Leaving

  /// Ends the session with one peer (GOODBYE `leaving`), or withdraws our invitation to it.
  public mutating func leave(_ peerID: PeerID, now: Duration, into actions: inout [SessionAction]) {
    autoConnect[peerID] = nil
    resumable.remove(peerID)
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
  public mutating func shutdown(now: Duration, into actions: inout [SessionAction]) {
    isShuttingDown = true
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

  /// Sends `body` to connected peers.
  /// - Returns: the message id (also when nobody could be reached: the error events name it).
  @discardableResult
  public mutating func send(_ body: [UInt8], to recipients: Recipients, timestamp: UInt64, now: Duration, into actions: inout [SessionAction])
    -> UInt64
  {
    sendMessage(body, to: recipients, timestamp: timestamp, now: now, into: &actions).id
  }

  /// Sends `body` to connected peers.
  /// - Returns: the message id and the peers it was queued for (each answers with a
  ///   `delivered` or an `undelivered` error).
  /// - Parameter id: the message id; `nil` takes the next one of the machine's counter (a
  ///   shell that assigns ids itself, on another thread, passes them).
  public mutating func sendMessage(
    _ body: [UInt8], to recipients: Recipients, id: UInt64? = nil, timestamp: UInt64, now: Duration, into actions: inout [SessionAction]
  ) -> (id: UInt64, recipients: [PeerID]) {
    let messageID: UInt64
    if let id {
      messageID = id
    } else {
      messageID = nextMessageID
      nextMessageID &+= 1
    }
    guard body.count <= ProtocolLimits.maximumBodyLength else {
      actions.append(.emit(.error(.rejected("message \(messageID) is \(body.count) bytes, more than the limit of 1 MiB"))))
      return (messageID, [])
    }
    var targets: [ConnectionID] = []
    var relayed: [PeerID: ConnectionID] = [:]
    let addressed: [PeerID]
    switch recipients {
    case .all:
      addressed = []
      for (peerID, record) in peers where peerID != localPeer.id {
        if let id = record.session {
          targets.append(id)
        } else if !record.isRelay, let route = record.bestRoute {
          relayed[peerID] = route
        }
      }
      for route in Set(relayed.values) where !targets.contains(route) { targets.append(route) }
      if targets.isEmpty {
        actions.append(.emit(.error(.rejected("message \(messageID) not sent: no peer is connected (invite one with /invite NAME)"))))
        return (messageID, [])
      }
      targets.sort()
    case .peers(let ids):
      var unique: [PeerID] = []
      for id in ids where !unique.contains(id) { unique.append(id) }
      guard unique.count <= ProtocolLimits.maximumRecipients else {
        actions.append(.emit(.error(.rejected("message \(messageID) has more than \(ProtocolLimits.maximumRecipients) recipients"))))
        return (messageID, [])
      }
      addressed = unique
      for peerID in unique {
        if let id = peers[peerID]?.session {
          if !targets.contains(id) { targets.append(id) }
        } else if let route = peers[peerID]?.bestRoute {
          relayed[peerID] = route
          if !targets.contains(route) { targets.append(route) }
        } else {
          actions.append(
            .emit(.error(.undelivered(messageID: messageID, peer: peers[peerID]?.peer, peerID: peerID, reason: .notConnected))))
        }
      }
      if targets.isEmpty { return (messageID, []) }
    }
    let message = Frame.Message(id: messageID, sender: localPeer.id, timestamp: timestamp, recipients: addressed, body: body)
    var expected: [PeerID] = []
    for id in targets {
      let peerID = updateConnection(id) { record -> PeerID? in
        record.machine?.noteSent(now: now)
        return record.peerID
      }
      // A direct session expects an acknowledgement from its peer (relays do not consume).
      guard let peerID = peerID ?? nil, peerRecord(peerID, { $0.isRelay }) != true else { continue }
      if case .peers(let ids) = recipients, !ids.contains(peerID) { continue }
      updateConnection(id) { $0.unacked.append(messageID) }
      expected.append(peerID)
    }
    if !relayed.isEmpty {
      relayPending[messageID] = relayed
      expected += relayed.keys.sorted()
    }
    actions.append(.sendMessage(message, targets))
    return (messageID, expected)
  }

  /// A shell that wrote a message to direct sessions itself (on another thread) records it
  /// here, so the acknowledgements find it (or its loss is reported when a connection closes).
  public mutating func recordSent(_ messageID: UInt64, on ids: [ConnectionID], now: Duration) {
    for id in ids {
      updateConnection(id) { record in
        record.unacked.append(messageID)
        record.machine?.noteSent(now: now)
      }
    }
  }

  /// The connections a message to `recipients` would be queued on (for a shell that waits
  /// until they have room before sending).
  public func connections(for recipients: Recipients) -> [ConnectionID] {
    switch recipients {
    case .all:
      var result: [ConnectionID] = []
      for (peerID, record) in peers where peerID != localPeer.id {
        if let id = record.session {
          result.append(id)
        } else if !record.isRelay, let route = record.bestRoute, !result.contains(route) {
          result.append(route)
        }
      }
      return result
    case .peers(let ids):
      var result: [ConnectionID] = []
      for id in ids {
        if let route = peers[id]?.session ?? peers[id]?.bestRoute, !result.contains(route) { result.append(route) }
      }
      return result
    }
  }

  /// The shell could not queue a message on a connection (its queue is full).
  public mutating func sendFailed(messageID: UInt64, on id: ConnectionID, reason: UndeliveredReason, into actions: inout [SessionAction]) {
    if connections[id]?.unacked.remove(messageID) == true, let peerID = connections[id]?.peerID {
      actions.append(.emit(.error(.undelivered(messageID: messageID, peer: peers[peerID]?.peer, peerID: peerID, reason: reason))))
    }
    // Peers reached through that connection (a relay) do not get it either.
    for (recipient, route) in relayPending[messageID] ?? [:] where route == id {
      relayPending[messageID]?[recipient] = nil
      actions.append(.emit(.error(.undelivered(messageID: messageID, peer: peers[recipient]?.peer, peerID: recipient, reason: reason))))
    }
    if relayPending[messageID]?.isEmpty == true { relayPending[messageID] = nil }
  }

  mutating func deliver(_ message: Frame.Message, on id: ConnectionID, into actions: inout [SessionAction]) {
    if deduplicates, !seen.insert(sender: message.sender, id: message.id) {
      relayStatistics.duplicatesDropped += 1
      return
    }
    if isRelay {
      forward(message, from: id, into: &actions)
      return
    }
    if message.isPrivate, !message.recipients.contains(localPeer.id) {
      let report = Frame.Undeliverable(origin: message.sender, messageID: message.id, recipient: message.recipients[0], reason: .notForMe)
      actions.append(.send(id, .undeliverable(report)))
      return
    }
    let from: Peer
    if let known = peerRecord(message.sender, { $0.peer }) {
      from = known
    } else {
      // A peer behind a relay whose roster entry has not arrived (yet): name it by its id.
      from = Peer(id: message.sender, name: try! DisplayName("peer-\(message.sender.shortHex)"))
    }
    actions.append(
      .emit(.message(ReceivedMessage(id: message.id, from: from, isPrivate: message.isPrivate, timestamp: message.timestamp, body: message.body))))
    updateConnection(id) { $0.acks.append(Ack(origin: message.sender, id: message.id)) }
  }

  mutating func acknowledged(_ delivered: Frame.Delivered, on id: ConnectionID, into actions: inout [SessionAction]) {
    guard delivered.origin == localPeer.id else {
      routeTowardOrigin(delivered.origin, .delivered(delivered), from: id, into: &actions)
      return
    }
    guard let peer = peers[delivered.recipient]?.peer else { return }
    let direct = peers[delivered.recipient]?.session
    for messageID in delivered.ids {
      if let direct, updateConnection(direct, { $0.unacked.remove(messageID) }) == true {
        actions.append(.emit(.delivered(messageID: messageID, to: peer)))
      } else if relayPending[messageID]?.removeValue(forKey: delivered.recipient) != nil {
        if relayPending[messageID]?.isEmpty == true { relayPending[messageID] = nil }
        actions.append(.emit(.delivered(messageID: messageID, to: peer)))
      }
    }
  }

  mutating func flushAcknowledgements(on id: ConnectionID, now: Duration, into actions: inout [SessionAction]) {
    guard
      let acks = updateConnection(
        id,
        { record -> [Ack] in
          defer { record.acks.removeAll(keepingCapacity: true) }
          return record.acks
        }), !acks.isEmpty
    else { return }
    // Usually every message of a batch has one origin (the peer on the connection).
    var origins: [PeerID] = []
    var idsByOrigin: [PeerID: [UInt64]] = [:]
    if acks.allSatisfy({ $0.origin == acks[0].origin }) {
      origins = [acks[0].origin]
      idsByOrigin[acks[0].origin] = acks.map(\.id)
    } else {
      for ack in acks {
        if idsByOrigin[ack.origin] == nil { origins.append(ack.origin) }
        idsByOrigin[ack.origin, default: []].append(ack.id)
      }
    }
    for origin in origins {
      let ids = idsByOrigin[origin]!
      var start = 0
      while start < ids.count {
        let end = min(start + ProtocolLimits.maximumDeliveredIDs, ids.count)
        actions.append(.send(id, .delivered(Frame.Delivered(origin: origin, recipient: localPeer.id, ids: Array(ids[start..<end])))))
        start = end
      }
    }
    updateConnection(id) { $0.machine?.noteSent(now: now) }
  }

  /// In-place access to a connection's record. (Mutating through `connections[id]` moves the
  /// record into an `Optional` and back, and reading through it copies the whole record:
  /// on the per-message path, that copying was a tenth of the CPU time.)
  @inline(__always) @discardableResult
  mutating func updateConnection<R>(_ id: ConnectionID, _ body: (inout ConnectionRecord) -> R) -> R? {
    guard let index = connections.index(forKey: id) else { return nil }
    return body(&connections.values[index])
  }

  /// Reads one part of a connection's record without copying the record.
  @inline(__always)
  func connection<R>(_ id: ConnectionID, _ read: (borrowing ConnectionRecord) -> R) -> R? {
    guard let index = connections.index(forKey: id) else { return nil }
    return read(connections.values[index])
  }

  /// Reads one part of a peer's record without copying the record.
  @inline(__always)
  func peerRecord<R>(_ id: PeerID, _ read: (borrowing PeerRecord) -> R) -> R? {
    guard let index = peers.index(forKey: id) else { return nil }
    return read(peers.values[index])
  }

}
