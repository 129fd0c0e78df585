// One file: losing, suspending, resuming and ending a session share the continuity records
// and the exactly-once rules of what is resent; split, each half would need the other's.

/// Sessions that outlive their connections (PROTOCOL.md 6.5).
///
/// When the connection of a session is lost without a goodbye (the peer went silent, the
/// stream was cut), the session is *suspended* instead of ended: the side that opened the
/// connection dials the peer again with backoff, the other waits, and both report
/// ``SessionEvent/reconnecting(_:attempt:)``. On the new connection the handshake proves the
/// peer's key again, the connector sends RESUME instead of INVITE, the listener answers with
/// its own RESUME, and each side resends the messages the other says it has not received:
/// ``SessionEvent/reconnected(_:)``, with nothing lost and nothing delivered twice. Only when
/// the grace period ends (or the peer no longer knows the session) is the peer reported
/// disconnected and the messages still waiting for it failed.
extension SessionStateMachine {
  struct Reconnection: Sendable {
    var sessions: [PeerID: SessionContinuity] = [:]
  }

  /// What a session carries from one connection to the next.
  struct SessionContinuity: Sendable {
    /// The invitation id of the INVITE that began the session.
    let id: UInt64
    /// We opened the session's connection: we are the one that reconnects.
    let isConnector: Bool
    /// Both HELLOs offered resumption.
    let resumable: Bool
    /// The last message id received from the peer, and the last one its application took.
    var received: UInt64?
    var taken: UInt64?
    /// Where we reached the peer (a connector), for when it is not discovered any more.
    var endpoints: [Endpoint]
    /// The endpoint where the peer last answered (a connector): tried first by every attempt.
    var reached: Endpoint?
    /// Earlier connections of the session, oldest first: the application may still take
    /// messages that came through them.
    var former: [ConnectionID] = []
    /// Set while the session has no connection.
    var suspension: Suspension?
    /// Messages of the peer that the application took while the session had no connection
    /// (since our last RESUME or answer was made, whose `delivered` does not cover them):
    /// they are acknowledged once the session is back. (They were simply not acknowledged: a
    /// message taken between our RESUME and its answer stayed unanswered at its sender until
    /// the next loss of the connection.)
    var takenWhileAway: [UInt64] = []
  }

  struct Suspension: Sendable {
    let deadline: Duration
    /// How the connection was lost.
    let cause: DisconnectReason
    /// Our messages the peer has not acknowledged, and those sent meanwhile.
    var window: ResendWindow
    var attempts = 0
    /// When to dial again (a connector between attempts).
    var nextAttempt: Duration?
    /// The connection of the attempt under way.
    var attempt: ConnectionID?
  }

  /// The most former connections a session remembers (a peer that flaps without any message
  /// taken in between).
  static let maximumFormerConnections = 64

  /// Whether our sessions resume (our HELLO says so).
  var offersResumption: Bool { configuration.reconnectGrace > .zero }

  /// The pause after a failed attempt: 250 ms, 500 ms, 1 s, then every 2 s.
  static func reconnectBackoff(afterAttempts attempts: Int) -> Duration {
    min(.milliseconds(250 << min(max(attempts - 1, 0), 3)), .seconds(2))
  }

  /// The backoff schedule (exposed for tests).
  package static func reconnectBackoffForTesting(afterAttempts attempts: Int) -> Duration { reconnectBackoff(afterAttempts: attempts) }

  // MARK: What the session knows

  /// Whether the session with a peer waits to resume.
  package func isSuspended(_ id: PeerID) -> Bool { reconnection.sessions[id]?.suspension != nil }

  /// Peers whose session waits to resume, by name.
  package var reconnectingPeers: [Peer] {
    reconnection.sessions.compactMap { $0.value.suspension == nil ? nil : peers[$0.key]?.peer }.sorted { $0.name.value < $1.name.value }
  }

  /// The earliest grace deadline or attempt.
  var reconnectionDeadline: Duration? {
    var earliest: Duration?
    for session in reconnection.sessions.values {
      guard let suspension = session.suspension else { continue }
      let next = suspension.nextAttempt.map { min($0, suspension.deadline) } ?? suspension.deadline
      earliest = earliest.map { min($0, next) } ?? next
    }
    return earliest
  }

  /// Why a peer cannot be invited now, when its session waits to resume.
  func reconnectingRejection(_ id: PeerID) -> String? {
    guard let session = reconnection.sessions[id], session.suspension != nil, let peer = peers[id]?.peer else { return nil }
    return session.isConnector
      ? "\(peer) is reconnecting: the session resumes by itself (or ends when the grace period is over)"
      : "\(peer) is away: it resumes the session when it is back (or the session ends when the grace period is over)"
  }

  /// The resend windows of a message's recipients that are full: the sender waits.
  package mutating func fullWindows(_ routing: Routing) -> [PeerID] {
    let limit = configuration.resendWindowBytes
    var full: [PeerID] = []
    for id in routing.answering {
      guard let (peerID, bytes) = updateConnection(id, { ($0.peerID, $0.unacked.keepsMessages ? $0.unacked.byteCount : 0) }), let peerID else {
        continue
      }
      if bytes >= limit { full.append(peerID) }
    }
    for peerID in routing.suspended where (reconnection.sessions[peerID]?.suspension?.window.byteCount ?? 0) >= limit {
      full.append(peerID)
    }
    return full + fullRelayWindows(routing)
  }

  /// Whether a peer's resend window has room again.
  package func windowHasRoom(_ peerID: PeerID) -> Bool {
    guard relayWindowHasRoom(peerID) else { return false }
    if let suspension = reconnection.sessions[peerID]?.suspension { return suspension.window.byteCount < configuration.resendWindowBytes }
    guard let session = peers[peerID]?.session, let bytes = connection(session, { $0.unacked.byteCount }) else { return true }
    return bytes < configuration.resendWindowBytes
  }

  /// Reads a session's flag in place (the dictionary's getter copies the whole record).
  private static func isResumable(_ session: inout SessionContinuity) -> Bool { session.resumable }

  // MARK: Beginning, losing and ending

  /// A session was established by INVITE and ACCEPT.
  mutating func sessionBegan(_ peerID: PeerID, on id: ConnectionID, now: Duration, into actions: inout [SessionAction]) {
    if isSuspended(peerID) {
      endSuspendedSession(peerID, reason: .notResumed("a new session replaced it"), now: now, into: &actions)
    }
    guard let machine = connections[id]?.machine, let sessionID = machine.sessionID else { return }
    let resumable = offersResumption && machine.peerOffersResumption
    reconnection.sessions[peerID] = SessionContinuity(
      id: sessionID, isConnector: machine.isConnector, resumable: resumable, endpoints: connections[id]?.endpoints ?? [],
      reached: connections[id]?.reached)
    updateConnection(id) { $0.unacked.keepsMessages = resumable }
  }

  /// The session ended for good (GOODBYE, an error, leaving, replaced).
  mutating func sessionEnded(_ peerID: PeerID) { reconnection.sessions[peerID] = nil }

  /// The losses a session resumes after: the network's, not the peer's decisions.
  static func isResumable(_ reason: DisconnectReason) -> Bool {
    switch reason {
    case .timedOut, .connectionLost, .securityFailure: true
    default: false
    }
  }

  /// The connection of a session was lost. - Returns: whether the session waits to resume
  /// (then nothing is reported disconnected and nothing fails).
  mutating func suspendSession(
    _ peerID: PeerID, _ record: inout ConnectionRecord, connection id: ConnectionID, reason: DisconnectReason, now: Duration,
    into actions: inout [SessionAction]
  ) -> Bool {
    guard !isShuttingDown, var session = reconnection.sessions[peerID], session.resumable, Self.isResumable(reason) else { return false }
    var window = record.unacked
    record.unacked = ResendWindow()
    window.keepsMessages = true
    session.former.append(id)
    if session.former.count > Self.maximumFormerConnections { session.former.removeFirst() }
    session.suspension = Suspension(
      deadline: now + configuration.reconnectGrace, cause: reason, window: window, nextAttempt: session.isConnector ? now : nil)
    reconnection.sessions[peerID] = session
    relaySessionEnded(id, peerID: peerID, resuming: true, now: now, into: &actions)
    if session.isConnector {
      startReconnectAttempt(peerID, now: now, into: &actions)
    } else if let peer = peers[peerID]?.peer {
      actions.append(.emit(.reconnecting(peer, attempt: 0)))
    }
    return true
  }

  /// Ends a session that waits to resume: the peer is disconnected, what waited for it fails.
  mutating func endSuspendedSession(_ peerID: PeerID, reason: DisconnectReason, now: Duration, into actions: inout [SessionAction]) {
    guard let session = reconnection.sessions[peerID], var suspension = session.suspension else { return }
    reconnection.sessions[peerID] = nil
    if let peer = peers[peerID]?.peer { actions.append(.emit(.disconnected(peer, reason))) }
    for messageID in suspension.window.removeAll() { noteFailed(messageID, peerID, .connectionClosed(reason), into: &actions) }
    relaySuspensionEnded(peerID, reason: reason, into: &actions)
    // What brings a relay back (or a found peer, with `connectFound`) is how it was lost.
    if case .local = reason {
      autoConnectAfterSession(peerID, reason: reason, now: now)
    } else {
      autoConnectAfterSession(peerID, reason: suspension.cause, now: now)
    }
    if let attempt = suspension.attempt { abandonAttempt(attempt, now: now, into: &actions) }
    if !isShuttingDown { acceptHeldInvitation(from: peerID, now: now, into: &actions) }
    forgetIfIdle(peerID)
  }

  /// The peer invites us while its session with us waits to resume: it no longer has it.
  mutating func endSuspendedSessionOnInvitation(_ peerID: PeerID, now: Duration, into actions: inout [SessionAction]) {
    guard isSuspended(peerID) else { return }
    let name = peers[peerID]?.peer.name.value ?? "the peer"
    endSuspendedSession(
      peerID, reason: .notResumed("\(name) started a new session (it restarted, or stopped waiting for this one)"), now: now, into: &actions)
  }

  /// Grace periods and attempts that are due (from ``tick(now:into:)``).
  mutating func runReconnection(now: Duration, into actions: inout [SessionAction]) {
    guard !reconnection.sessions.isEmpty else { return }
    for peerID in reconnection.sessions.keys.sorted() {
      guard let session = reconnection.sessions[peerID], let suspension = session.suspension else { continue }
      if now >= suspension.deadline {
        let grace = configuration.reconnectGrace.formattedSeconds
        endSuspendedSession(peerID, reason: .notResumed("\(suspension.cause); not back within \(grace)"), now: now, into: &actions)
      } else if session.isConnector, suspension.attempt == nil, let next = suspension.nextAttempt, next <= now {
        startReconnectAttempt(peerID, now: now, into: &actions)
      }
    }
  }

  // MARK: Attempts (the connector)

  /// The most endpoints a reconnecting session keeps for its peer.
  static let maximumReconnectEndpoints = 16

  /// Dials the peer again: where it last answered first, then its discovered endpoints and
  /// the ones dialled before, in turns, each attempt starting from the next of them.
  ///
  /// A DNS-SD record anybody can publish with the peer's id may name other hosts: with the
  /// discovered endpoints alone, first in every attempt, such a record sent each attempt
  /// there until the grace period ended the session; and with 16 of them, first in a list
  /// of 16, the endpoints dialled before were left out.
  mutating func startReconnectAttempt(_ peerID: PeerID, now: Duration, into actions: inout [SessionAction]) {
    guard var session = reconnection.sessions[peerID], var suspension = session.suspension, suspension.attempt == nil else { return }
    if let discovered = peers[peerID]?.discovered?.endpoints, !discovered.isEmpty {
      // Taken in turns: the endpoints dialled before keep half the places.
      let before = session.endpoints.filter { !discovered.contains($0) }
      var merged: [Endpoint] = []
      for index in 0..<max(discovered.count, before.count) {
        if index < discovered.count { merged.append(discovered[index]) }
        if index < before.count { merged.append(before[index]) }
      }
      session.endpoints = Array(merged.prefix(Self.maximumReconnectEndpoints))
    }
    suspension.attempts += 1
    suspension.nextAttempt = nil
    if let peer = peers[peerID]?.peer { actions.append(.emit(.reconnecting(peer, attempt: suspension.attempts))) }
    let others = session.endpoints.filter { $0 != session.reached }
    var endpoints = session.reached.map { [$0] } ?? []
    if !others.isEmpty {
      let first = (suspension.attempts - 1) % others.count
      endpoints += others[first...] + others[..<first]
    }
    if endpoints.isEmpty {
      suspension.nextAttempt = now + Self.reconnectBackoff(afterAttempts: suspension.attempts)
    } else {
      let connection = reserveConnectionID()
      connections[connection] = ConnectionRecord(direction: .outbound, peerID: peerID, invite: nil, endpoints: endpoints)
      suspension.attempt = connection
      actions.append(.connect(connection, endpoints))
    }
    session.suspension = suspension
    reconnection.sessions[peerID] = session
  }

  /// A connection ended. - Returns: whether it was an attempt to resume (the next one is
  /// scheduled).
  @discardableResult
  mutating func reconnectAttemptEnded(_ id: ConnectionID, peerID: PeerID?, now: Duration) -> Bool {
    guard let peerID, var suspension = reconnection.sessions[peerID]?.suspension, suspension.attempt == id else { return false }
    suspension.attempt = nil
    suspension.nextAttempt = now + Self.reconnectBackoff(afterAttempts: suspension.attempts)
    reconnection.sessions[peerID]?.suspension = suspension
    return true
  }

  /// Our attempt's handshake completed: ask the peer to resume.
  mutating func resumeOnHello(_ id: ConnectionID, now: Duration, into actions: inout [SessionAction]) {
    guard let peerID = connection(id, { $0.peerID }) ?? nil, let session = reconnection.sessions[peerID], session.suspension?.attempt == id,
      let machine = connections[id]?.machine
    else { return }
    guard machine.peerOffersResumption else {
      // It came back without resumption (another build, or resumption turned off).
      let transition = connections[id]!.machine!.goodbye(.leaving, now: now)
      perform(transition, on: id, now: now, into: &actions)
      let name = peers[peerID]?.peer.name.value ?? "the peer"
      endSuspendedSession(peerID, reason: .notResumed("\(name) came back without resumption"), now: now, into: &actions)
      return
    }
    let resume = Frame.Resume(session: session.id, received: session.received, delivered: session.taken)
    reconnection.sessions[peerID]?.takenWhileAway = []  // `delivered` covers them
    let transition = connections[id]!.machine!.resume(resume, now: now)
    perform(transition, on: id, now: now, into: &actions)
  }

  /// The peer declined our RESUME (or did not answer in time). - Returns: whether `id` was
  /// an attempt to resume.
  mutating func resumeDeclined(_ id: ConnectionID, peerID: PeerID, reason: DeclineReason, now: Duration, into actions: inout [SessionAction]) -> Bool
  {
    guard let suspension = reconnection.sessions[peerID]?.suspension, suspension.attempt == id else { return false }
    reconnection.sessions[peerID]?.suspension?.attempt = nil
    if reason == .unknownSession {
      let name = peers[peerID]?.peer.name.value ?? "the peer"
      endSuspendedSession(
        peerID, reason: .notResumed("\(name) no longer knows the session (it restarted, or stopped waiting)"), now: now, into: &actions)
    } else {
      reconnection.sessions[peerID]?.suspension?.nextAttempt = now + Self.reconnectBackoff(afterAttempts: suspension.attempts)
    }
    return true
  }

  /// Drops an attempt we no longer need.
  private mutating func abandonAttempt(_ id: ConnectionID, now: Duration, into actions: inout [SessionAction]) {
    guard connections[id] != nil else { return }
    if connections[id]!.machine == nil {
      connections[id] = nil
      actions.append(.close(id, .now))
    } else {
      let transition = connections[id]!.machine!.goodbye(.duplicate, now: now)
      perform(transition, on: id, now: now, into: &actions)
    }
  }

  // MARK: Resuming

  /// Listener: the peer asks to resume a session on connection `id`.
  mutating func resumeRequested(_ resume: Frame.Resume, on id: ConnectionID, now: Duration, into actions: inout [SessionAction]) {
    guard !isShuttingDown, let peerID = connection(id, { $0.peerID }) ?? nil, var session = reconnection.sessions[peerID], session.resumable,
      session.id == resume.session
    else {
      let transition = connections[id]!.machine!.refuseResume(resume.session, now: now)
      perform(transition, on: id, now: now, into: &actions)
      return
    }
    let window: ResendWindow
    let wasSuspended: Bool
    if let suspension = session.suspension {
      window = suspension.window
      wasSuspended = true
      session.suspension = nil
      reconnection.sessions[peerID] = session
      if let attempt = suspension.attempt { abandonAttempt(attempt, now: now, into: &actions) }
    } else if let old = peers[peerID]?.session, old != id {
      // The peer lost the old connection before we noticed: the session moves here.
      window = connections[old]?.unacked ?? ResendWindow()
      wasSuspended = false
      updateConnection(old) { $0.unacked = ResendWindow() }
      peers[peerID]?.session = nil
      relaySessionEnded(old, peerID: peerID, resuming: true, now: now, into: &actions)
      session.former.append(old)
      if session.former.count > Self.maximumFormerConnections { session.former.removeFirst() }
      reconnection.sessions[peerID] = session
      actions.append(.close(old, .now))
      removeConnection(old, reason: nil, now: now, into: &actions)
    } else {
      let transition = connections[id]!.machine!.refuseResume(resume.session, now: now)
      perform(transition, on: id, now: now, into: &actions)
      return
    }
    let answer = Frame.Resume(session: session.id, received: session.received, delivered: session.taken)
    reconnection.sessions[peerID]?.takenWhileAway = []  // `delivered` covers them
    let transition = connections[id]!.machine!.answerResume(answer, now: now)
    perform(transition, on: id, now: now, into: &actions)
    sessionResumed(peerID, on: id, window: window, peerHas: resume, report: wasSuspended, now: now, into: &actions)
  }

  /// Connector: the peer answered our RESUME with its own.
  mutating func resumeAnswered(_ resume: Frame.Resume, on id: ConnectionID, now: Duration, into actions: inout [SessionAction]) {
    guard let peerID = connection(id, { $0.peerID }) ?? nil, var session = reconnection.sessions[peerID], let suspension = session.suspension,
      suspension.attempt == id
    else {
      let transition = connections[id]?.machine?.goodbye(.duplicate, now: now) ?? ConnectionTransition()
      perform(transition, on: id, now: now, into: &actions)
      return
    }
    session.suspension = nil
    if let reached = connections[id]?.reached { session.reached = reached }
    reconnection.sessions[peerID] = session
    sessionResumed(peerID, on: id, window: suspension.window, peerHas: resume, report: true, now: now, into: &actions)
  }

  /// The session continues on connection `id`: what the peer's application took counts as
  /// delivered, what it did not receive is sent again, in order, before anything new.
  private mutating func sessionResumed(
    _ peerID: PeerID, on id: ConnectionID, window: ResendWindow, peerHas resume: Frame.Resume, report: Bool, now: Duration,
    into actions: inout [SessionAction]
  ) {
    guard let peer = peers[peerID]?.peer else { return }
    var window = window
    window.keepsMessages = true
    let delivered = resume.delivered.map { window.removeThrough($0) } ?? []
    let missing = window.messages(after: resume.received)
    updateConnection(id) { $0.unacked = window }
    peers[peerID]?.session = id
    peers[peerID]?.announcedReachable = false
    autoConnect[peerID] = nil
    actions.append(report ? .emit(.reconnected(peer)) : .sessionMoved(peerID))
    for messageID in delivered { noteDelivered(messageID, peer, into: &actions) }
    if !missing.isEmpty {
      actions.append(.resendMessages(missing, id))
      updateConnection(id) { $0.machine?.noteSent(now: now) }
    }
    if let taken = reconnection.sessions[peerID]?.takenWhileAway, !taken.isEmpty {
      reconnection.sessions[peerID]?.takenWhileAway = []
      sendDelivered(taken, of: peerID, on: id, signed: false, now: now, into: &actions)
    }
    resendRelayed(peerID, on: id, into: &actions)
    relaySessionEstablished(id, peerID: peerID, now: now, into: &actions)
  }

  // MARK: Messages across connections

  /// A direct message from the session's peer: remembered as received, or dropped as a copy
  /// of one received before the connection changed. - Returns: whether to deliver it.
  mutating func admitDirect(_ message: Frame.Message, on id: ConnectionID, into actions: inout [SessionAction]) -> Bool {
    guard let index = reconnection.sessions.index(forKey: message.sender), updatePeer(message.sender, { $0.session }) == id else { return true }
    // In place: this runs for every message received (the getter would copy the record).
    return Self.admit(message, on: id, local: localPeer.id, &reconnection.sessions.values[index], into: &actions)
  }

  private static func admit(
    _ message: Frame.Message, on id: ConnectionID, local: PeerID, _ session: inout SessionContinuity, into actions: inout [SessionAction]
  ) -> Bool {
    guard session.resumable else { return true }
    if let last = session.received, SerialNumber.isAtOrBefore(message.id, last) {
      // Its application took it already: say so again (the first DELIVERED may be lost).
      if let taken = session.taken, SerialNumber.isAtOrBefore(message.id, taken) {
        actions.append(.send(id, .delivered(Frame.Delivered(origin: message.sender, recipient: local, ids: [message.id]))))
      }
      return false
    }
    session.received = message.id
    return true
  }

  /// Where to acknowledge messages of `origin` that came through `connection` (the last of
  /// them is `last`). A session that resumed acknowledges on its current connection, and
  /// remembers what its application took for the next RESUME. - Returns: the connection to
  /// send DELIVERED on, or nil when the session has none now.
  mutating func acknowledgementRoute(_ connection: ConnectionID, origin: PeerID, last: UInt64) -> ConnectionID? {
    guard let index = reconnection.sessions.index(forKey: origin), Self.isResumable(&reconnection.sessions.values[index]) else { return connection }
    let current = updatePeer(origin, { $0.session }) ?? nil
    if current == connection {
      reconnection.sessions.values[index].taken = last
      if !reconnection.sessions.values[index].former.isEmpty { reconnection.sessions.values[index].former.removeAll() }
      return connection
    }
    guard let position = reconnection.sessions.values[index].former.firstIndex(of: connection) else { return connection }
    // Messages are taken in the order they arrived: the older connections are done.
    reconnection.sessions.values[index].taken = last
    reconnection.sessions.values[index].former.removeFirst(position)
    return current
  }

  /// The application took `ids` of `origin` while its session had no connection: they are
  /// acknowledged when it is back (see ``SessionContinuity/takenWhileAway``). No cap: the
  /// list holds only messages received from the peer and taken, and every RESUME or answer
  /// made empties it (a cap of one DELIVERED frame's worth dropped the oldest of a larger
  /// backlog taken after the RESUME went out: the very ids nothing else acknowledges).
  mutating func noteTakenWhileAway(origin: PeerID, ids: [UInt64]) {
    guard let index = reconnection.sessions.index(forKey: origin) else { return }
    reconnection.sessions.values[index].takenWhileAway += ids
  }
}
