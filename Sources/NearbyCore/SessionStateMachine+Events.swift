extension SessionStateMachine {
  /// A peer's VERIFY requests on a connection shown at most once this often (the rest are
  /// ignored: the code shown is the same).
  package static let verificationRequestInterval = Duration.seconds(10)

  /// Turns one connection event into session state and actions.
  mutating func handle(_ event: ConnectionEvent, on id: ConnectionID, now: Duration, into actions: inout [SessionAction]) {
    switch event {
    case .helloReceived(let hello):
      helloReceived(hello, on: id, now: now, into: &actions)
    case .invited(let invite):
      invited(invite, on: id, now: now, into: &actions)
    case .invitationExpired:
      withdrawPending(id, reason: "the invitation timed out", into: &actions)
    case .accepted:
      sessionEstablished(on: id, now: now, into: &actions)
    case .declined(let reason):
      guard let record = connections[id], let peerID = record.peerID else { return }
      if resumeDeclined(id, peerID: peerID, reason: reason, now: now, into: &actions) { return }
      if peers[peerID]?.outbound == id { peers[peerID]?.outbound = nil }
      if let peer = peers[peerID]?.peer { actions.append(.emit(.declined(peer, reason))) }
      autoConnectDeclined(peerID, reason: reason)
      acceptHeldInvitation(from: peerID, now: now, into: &actions)
    case .message(let message):
      deliver(message, on: id, now: now, into: &actions)
    case .delivered(let delivered):
      acknowledged(delivered, on: id, now: now, into: &actions)
    case .undeliverable(let report):
      // Only relays write reports about others' messages (PROTOCOL.md 9.3): one from any other
      // peer is dropped, not passed on (any peer of a relay could make a message fail, and
      // its real receipt be ignored), and taken only about a message we sent on that path.
      let fromRelay = connections[id]?.toRelay == true
      guard report.origin == localPeer.id else {
        if fromRelay { routeTowardOrigin(report.origin, .undeliverable(report), from: id, into: &actions) }
        return
      }
      if report.reason == .queued {
        if fromRelay { noteQueued(report, into: &actions) }
        return
      }
      // A direct message fails by its recipient's own word, on its session; one sent through
      // relays, by a relay's. (A `notForMe` names the first listed recipient, not the peer
      // that sends it: it is not taken, and the message waits for the connection to end. A
      // conforming sender never causes one.)
      let direct = peers[report.recipient]?.session
      let removedDirect = direct == id && connections[id]?.unacked.remove(report.messageID) == true
      let removedRelayed = fromRelay && relayedAnswered(report.messageID, by: report.recipient)
      guard removedDirect || removedRelayed else { return }
      noteFailed(report.messageID, report.recipient, .remote(report.reason), into: &actions)
    case .roster(let roster):
      receivedRoster(roster, on: id, now: now, into: &actions)
    case .roundTrip:
      break
    case .verificationRequested:
      guard let peerID = connections[id]?.peerID, let peer = peers[peerID]?.peer, peers[peerID]?.session == id,
        let code = connections[id]?.authenticated?.verificationCode
      else { return }
      // One shown per interval (PROTOCOL.md 4.12): a peer repeating VERIFY filled the event
      // sequence, which no flow control limits for events other than messages.
      if let shown = connections[id]?.verificationShown, now - shown < Self.verificationRequestInterval { return }
      connections[id]?.verificationShown = now
      actions.append(.emit(.verification(peer, code: code, askedByPeer: true)))
    case .resumeRequested(let resume):
      resumeRequested(resume, on: id, now: now, into: &actions)
    case .resumed(let resume):
      resumeAnswered(resume, on: id, now: now, into: &actions)
    case .file(let transfer):
      transferFrameReceived(transfer, on: id, into: &actions)
    case .closed(let reason):
      guard var record = connections[id] else { return }
      connectionEnded(&record, id: id, reason: reason, now: now, into: &actions)
      connections[id] = record
    }
  }

  private mutating func helloReceived(_ hello: Frame.Hello, on id: ConnectionID, now: Duration, into actions: inout [SessionAction]) {
    guard var record = connections[id] else { return }
    let peerID = hello.peer.id
    // Keep the freshest name; create the record for peers we did not discover.
    if peers[peerID] == nil {
      peers[peerID] = PeerRecord(peer: hello.peer)
    } else {
      peers[peerID]!.peer = peers[peerID]!.peer.renamed(hello.peer.name)
    }
    if let key = record.authenticated?.publicKey { peers[peerID]!.publicKey = key }
    switch record.direction {
    case .inbound:
      record.peerID = peerID
      connections[id] = record
    case .outbound:
      if record.peerID == nil {
        // Dialled by address: now we know who it is.
        if peers[peerID]!.session != nil || peers[peerID]!.outbound != nil {
          actions.append(.emit(.error(.rejected("already connected to or inviting \(hello.peer)"))))
          let transition = connections[id]!.machine!.goodbye(.duplicate, now: now)
          perform(transition, on: id, now: now, into: &actions)
          return
        }
        record.peerID = peerID
        peers[peerID]!.outbound = id
        connections[id] = record
        actions.append(.emit(.connecting(hello.peer)))
        // 6.3, learnt late: the peer's invitation on the connection it opened arrived before
        // this HELLO told us whom we dialled. The same tie-break as when it arrives second.
        if let inbound = connections.first(where: { $0.key != id && $0.value.peerID == peerID && $0.value.awaitingAnswer })?.key {
          if peerID < localPeer.id {
            answer(inbound, accept: true, now: now, into: &actions)
            dropOwnAttempt(id, now: now, into: &actions)
            return
          }
          withdrawPending(inbound, reason: "crossed with your own invitation to \(hello.peer.name.value)", into: &actions)
          connections[inbound]?.held = true
        }
      }
      guard let invite = record.invite else {
        resumeOnHello(id, now: now, into: &actions)
        return
      }
      let transition = connections[id]!.machine!.invite(invite, now: now)
      perform(transition, on: id, now: now, into: &actions)
    }
  }

  private mutating func invited(_ invite: Frame.Invite, on id: ConnectionID, now: Duration, into actions: inout [SessionAction]) {
    guard let peerID = connections[id]?.peerID, let peer = peers[peerID]?.peer else { return }
    let localID = localPeer.id
    // The peer invites us while we wait to resume our session with it: it has lost that
    // session (it restarted, or stopped waiting), so the session ends here too.
    endSuspendedSessionOnInvitation(peerID, now: now, into: &actions)

    // 6.2: a peer we think is connected invites us again: its old session is gone.
    if let old = peers[peerID]?.session, old != id {
      if connections[old]?.direction == .outbound, localID < peerID {
        // 6.3: our connection won a crossing and this INVITE was sent before the peer saw
        // that; the peer closes this connection itself. Should our session end first, the
        // invitation is accepted then.
        connections[id]?.held = true
        return
      }
      if connections[old]?.machine != nil {
        let transition = connections[old]!.machine!.goodbye(.replaced, now: now)
        perform(transition, on: old, now: now, into: &actions)
      }
      answer(id, accept: true, now: now, into: &actions)
      return
    }

    // 6.3: crossing invitations.
    if let own = peers[peerID]?.outbound, own != id {
      if peerID < localID {
        // The peer's connection wins: accept it, drop ours.
        answer(id, accept: true, now: now, into: &actions)
        dropOwnAttempt(own, now: now, into: &actions)
      } else {
        // Ours wins: keep this invitation unanswered; the peer will accept ours.
        connections[id]?.held = true
      }
      return
    }

    if configuration.allowList.contains(peerID) || acceptsAgain(peerID, now: now) {
      if let limit = configuration.maximumPeers, connectedCount >= limit {
        decline(id, reason: .busy, now: now, into: &actions)
      } else {
        answer(id, accept: true, now: now, into: &actions)
      }
      return
    }
    switch configuration.acceptPolicy {
    case .none:
      decline(id, reason: .notAllowed, now: now, into: &actions)
    case .known:
      if configuration.verifiedPeers.contains(peerID) {
        if let limit = configuration.maximumPeers, connectedCount >= limit {
          decline(id, reason: .busy, now: now, into: &actions)
        } else {
          answer(id, accept: true, now: now, into: &actions)
        }
      } else {
        actions.append(
          .emit(.error(.rejected("declined the invitation of \(peer): only verified peers are accepted (compare codes with /verify, then /trust)"))))
        decline(id, reason: .notAllowed, now: now, into: &actions)
      }
    case .all:
      if let limit = configuration.maximumPeers, connectedCount >= limit {
        decline(id, reason: .busy, now: now, into: &actions)
      } else {
        answer(id, accept: true, now: now, into: &actions)
      }
    case .ask:
      if pendingInvitations.count >= configuration.maximumPendingInvitations {
        guard let evicted = invitationToMakeRoom(forSource: connections[id]?.source) else {
          decline(id, reason: .busy, now: now, into: &actions)
          return
        }
        withdrawPending(evicted, reason: "its host had more invitations waiting than any other; declined (busy) to make room", into: &actions)
        decline(evicted, reason: .busy, now: now, into: &actions)
      }
      let invitation = Invitation(
        connection: id, invitationID: invite.invitationID, peer: peer, context: invite.context,
        expiresAt: now + .milliseconds(Int64(invite.timeoutMilliseconds)))
      connections[id]?.awaitingAnswer = true
      pendingInvitations.append(invitation)
      actions.append(.emit(.invitation(invitation)))
    }
  }

  /// Every slot of pending invitations is taken, and a host (`source`) invites: the oldest
  /// invitation of the host that has the most waiting gives way, if it has at least two more
  /// than `source` (so the two never take turns). Without this, two hosts holding 16 each,
  /// for up to the 10 minutes an INVITE may ask, kept every other peer from inviting us.
  /// `nil` sources (unknown) count as one host.
  func invitationToMakeRoom(forSource source: String?) -> ConnectionID? {
    var counts: [String: (count: Int, oldest: ConnectionID)] = [:]
    for invitation in pendingInvitations {  // oldest first
      let key = connections[invitation.connection]?.source ?? ""
      counts[key, default: (0, invitation.connection)].count += 1
    }
    let newcomer = counts[source ?? ""]?.count ?? 0
    // The most, and among equals the one whose oldest invitation is oldest.
    let order = Dictionary(uniqueKeysWithValues: pendingInvitations.enumerated().map { ($1.connection, $0) })
    guard
      let top = counts.values.max(by: { ($0.count, order[$1.oldest] ?? 0) < ($1.count, order[$0.oldest] ?? 0) }),
      top.count > newcomer + 1
    else { return nil }
    return top.oldest
  }

  var connectedCount: Int { peers.values.filter { $0.session != nil }.count }

  private mutating func dropOwnAttempt(_ own: ConnectionID, now: Duration, into actions: inout [SessionAction]) {
    guard let record = connections[own] else { return }
    if let peerID = record.peerID, peers[peerID]?.outbound == own { peers[peerID]?.outbound = nil }
    if record.machine == nil {
      // Still connecting: abandon it quietly.
      connections[own] = nil
      actions.append(.close(own, .now))
    } else {
      let transition = connections[own]!.machine!.goodbye(.duplicate, now: now)
      perform(transition, on: own, now: now, into: &actions)
    }
  }

  /// Our own crossing attempt ended without a session: answer the peer's held invitation.
  mutating func acceptHeldInvitation(from peerID: PeerID, now: Duration, into actions: inout [SessionAction]) {
    guard let held = connections.first(where: { $0.value.peerID == peerID && $0.value.held })?.key else { return }
    connections[held]?.held = false
    answer(held, accept: true, now: now, into: &actions)
  }

  /// Accepts or declines the invitation on a connection.
  mutating func answer(_ id: ConnectionID, accept: Bool, now: Duration, into actions: inout [SessionAction]) {
    guard connections[id]?.machine != nil else { return }
    connections[id]!.awaitingAnswer = false
    pendingInvitations.removeAll { $0.connection == id }
    if accept {
      let transition = connections[id]!.machine!.accept(now: now)
      perform(transition, on: id, now: now, into: &actions)
    } else {
      decline(id, reason: .declined, now: now, into: &actions)
    }
  }

  private mutating func decline(_ id: ConnectionID, reason: DeclineReason, now: Duration, into actions: inout [SessionAction]) {
    guard connections[id]?.machine != nil else { return }
    connections[id]!.awaitingAnswer = false
    pendingInvitations.removeAll { $0.connection == id }
    let transition = connections[id]!.machine!.decline(reason, now: now)
    perform(transition, on: id, now: now, into: &actions)
  }

  private mutating func sessionEstablished(on id: ConnectionID, now: Duration, into actions: inout [SessionAction]) {
    guard let peerID = connections[id]?.peerID, var record = peers[peerID] else { return }
    if record.outbound == id { record.outbound = nil }
    record.session = id
    record.announcedReachable = false
    peers[peerID] = record
    autoConnect[peerID] = nil
    sessionBegan(peerID, on: id, now: now, into: &actions)
    let code = connections[id]?.authenticated?.verificationCode ?? ""
    let security = PeerSecurity(verificationCode: code, isVerified: configuration.verifiedPeers.contains(peerID))
    actions.append(.emit(.connected(record.peer, security)))
    relaySessionEstablished(id, peerID: peerID, now: now, into: &actions)
    // 6.3: the losing crossing connection(s) are closed.
    for (other, connection) in connections where other != id && connection.peerID == peerID && connection.held {
      connections[other]?.held = false
      let transition = connections[other]!.machine!.goodbye(.duplicate, now: now)
      perform(transition, on: other, now: now, into: &actions)
    }
    if let own = peers[peerID]?.outbound, own != id { dropOwnAttempt(own, now: now, into: &actions) }
  }

  private mutating func withdrawPending(_ id: ConnectionID, reason: String, into actions: inout [SessionAction]) {
    guard let index = pendingInvitations.firstIndex(where: { $0.connection == id }) else { return }
    let invitation = pendingInvitations.remove(at: index)
    connections[id]?.awaitingAnswer = false
    actions.append(.emit(.invitationWithdrawn(invitation.peer, reason)))
  }

  /// Reports what ended with a connection, exactly once per connection.
  mutating func connectionEnded(
    _ record: inout ConnectionRecord, id: ConnectionID, reason: DisconnectReason, now: Duration, into actions: inout [SessionAction]
  ) {
    // Its routes go with it (``relaySessionEnded``): it names nobody, also while it lingers,
    // closing (the room for peers goes by these counts: SessionStateMachine+PeerBudget).
    record.rosterRoutes = 0
    guard let peerID = record.peerID else {
      reportUnansweredInvitation(record, reason: reason, into: &actions)
      return
    }
    reconnectAttemptEnded(id, peerID: peerID, now: now)
    let peer = peers[peerID]?.peer
    if record.awaitingAnswer {
      record.awaitingAnswer = false
      withdrawPending(id, reason: "\(peer?.name.value ?? "the peer") \(reason)", into: &actions)
    }
    if peers[peerID]?.session == id {
      peers[peerID]?.session = nil
      if suspendSession(peerID, &record, connection: id, reason: reason, now: now, into: &actions) {
        record.held = false
        return
      }
      sessionEnded(peerID)
      if let peer { actions.append(.emit(.disconnected(peer, reason))) }
      relaySessionEnded(id, peerID: peerID, now: now, into: &actions)
      autoConnectAfterSession(peerID, reason: reason, now: now)
      if !isShuttingDown { acceptHeldInvitation(from: peerID, now: now, into: &actions) }
    } else if peers[peerID]?.outbound == id {
      peers[peerID]?.outbound = nil
      if case .goodbye(.duplicate) = reason {
      } else if let peer {
        actions.append(.emit(.disconnected(peer, reason)))
      }
      acceptHeldInvitation(from: peerID, now: now, into: &actions)
    }
    record.held = false
    failUnacknowledged(&record, reason: .connectionClosed(reason), into: &actions)
    forgetIfIdle(peerID, except: id)
  }

  /// An invitation by address whose connection ended before its handshake named the peer:
  /// whoever invited hears why. It used to end without a word, so that inviting an address
  /// that accepts TCP and never answers waited for ever. A failed authentication (which
  /// includes a refusal inside the handshake, such as ERROR busy) was reported already, and
  /// our own closing needs no word.
  private func reportUnansweredInvitation(_ record: ConnectionRecord, reason: DisconnectReason, into actions: inout [SessionAction]) {
    guard record.direction == .outbound, record.invite != nil else { return }
    switch reason {
    case .securityFailure, .local: return
    default: break
    }
    let target = record.endpoints.map(\.description).joined(separator: ", ")
    let detail =
      reason == .handshakeTimeout
      ? "\(target) accepted the connection but did not complete the handshake within \(configuration.timeouts.handshake.formattedSeconds) (is a Nearby peer listening there?)"
      : "\(target): \(reason)"
    actions.append(.emit(.error(.connectFailed(peer: nil, detail: detail))))
  }

  mutating func failUnacknowledged(_ record: inout ConnectionRecord, reason: UndeliveredReason, into actions: inout [SessionAction]) {
    guard !record.unacked.isEmpty, let peerID = record.peerID else { return }
    for messageID in record.unacked.removeAll() { noteFailed(messageID, peerID, reason, into: &actions) }
  }

  /// Drops the record of a peer that is neither discovered nor connected.
  mutating func forgetIfIdle(_ peerID: PeerID, except: ConnectionID? = nil) {
    guard let record = peers[peerID], record.discovered == nil, record.session == nil, record.outbound == nil, record.routes.isEmpty,
      reconnection.sessions[peerID] == nil, !isStranded(peerID)
    else { return }
    if connections.contains(where: { $0.key != except && $0.value.peerID == peerID }) { return }
    peers[peerID] = nil
    forgetSite(of: peerID)
  }
}
