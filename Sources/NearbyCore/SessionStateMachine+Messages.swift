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
  public mutating func sendMessage(_ body: [UInt8], to recipients: Recipients, timestamp: UInt64, now: Duration, into actions: inout [SessionAction])
    -> (id: UInt64, recipients: [PeerID])
  {
    let messageID = nextMessageID
    nextMessageID &+= 1
    guard body.count <= ProtocolLimits.maximumBodyLength else {
      actions.append(.emit(.error(.rejected("message \(messageID) is \(body.count) bytes, more than the limit of 1 MiB"))))
      return (messageID, [])
    }
    var targets: [ConnectionID] = []
    let addressed: [PeerID]
    switch recipients {
    case .all:
      addressed = []
      for (_, record) in peers {
        if let id = record.session { targets.append(id) }
      }
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
          targets.append(id)
        } else {
          actions.append(
            .emit(.error(.undelivered(messageID: messageID, peer: peers[peerID]?.peer, peerID: peerID, reason: .notConnected))))
        }
      }
      if targets.isEmpty { return (messageID, []) }
    }
    let message = Frame.Message(id: messageID, sender: localPeer.id, timestamp: timestamp, recipients: addressed, body: body)
    for id in targets {
      connections[id]?.unacked.append(messageID)
      connections[id]?.machine?.noteSent(now: now)
    }
    actions.append(.sendMessage(message, targets))
    return (messageID, targets.compactMap { connections[$0]?.peerID })
  }

  /// The shell could not queue a message on a connection (its queue is full).
  public mutating func sendFailed(messageID: UInt64, on id: ConnectionID, reason: UndeliveredReason, into actions: inout [SessionAction]) {
    guard connections[id]?.unacked.remove(messageID) == true, let peerID = connections[id]?.peerID else { return }
    actions.append(.emit(.error(.undelivered(messageID: messageID, peer: peers[peerID]?.peer, peerID: peerID, reason: reason))))
  }

  mutating func deliver(_ message: Frame.Message, on id: ConnectionID, into actions: inout [SessionAction]) {
    // Direct connection: the connection's machine checked that the sender is its peer.
    guard let from = peers[message.sender]?.peer else { return }
    if message.isPrivate, !message.recipients.contains(localPeer.id) {
      let report = Frame.Undeliverable(origin: message.sender, messageID: message.id, recipient: message.recipients[0], reason: .notForMe)
      actions.append(.send(id, .undeliverable(report)))
      return
    }
    actions.append(
      .emit(.message(ReceivedMessage(id: message.id, from: from, isPrivate: message.isPrivate, timestamp: message.timestamp, body: message.body))))
    connections[id]?.acks.append(message.id)
  }

  mutating func acknowledged(_ delivered: Frame.Delivered, on id: ConnectionID, into actions: inout [SessionAction]) {
    guard delivered.origin == localPeer.id else { return }
    guard let peer = peers[delivered.recipient]?.peer else { return }
    for messageID in delivered.ids where connections[id]?.unacked.remove(messageID) == true {
      actions.append(.emit(.delivered(messageID: messageID, to: peer)))
    }
  }

  mutating func flushAcknowledgements(on id: ConnectionID, now: Duration, into actions: inout [SessionAction]) {
    guard let acks = connections[id]?.acks, !acks.isEmpty, let peerID = connections[id]?.peerID else { return }
    connections[id]!.acks.removeAll(keepingCapacity: true)
    var start = 0
    while start < acks.count {
      let end = min(start + ProtocolLimits.maximumDeliveredIDs, acks.count)
      let frame = Frame.delivered(Frame.Delivered(origin: peerID, recipient: localPeer.id, ids: Array(acks[start..<end])))
      actions.append(.send(id, frame))
      start = end
    }
    connections[id]!.machine?.noteSent(now: now)
  }
}
