// One file: the connection state machine of PROTOCOL.md section 5 is one table (state x
// frame -> transition); its states, frames and timeouts are read together against the spec.

/// The protocol state of one TCP connection (PROTOCOL.md section 5), as a plain value: it
/// takes frames, local decisions and the time, and returns what to send, what to report
/// and whether to close. It performs no I/O and reads no clock, so every transition and
/// every timeout can be tested directly.
package struct ConnectionStateMachine: Sendable {
  /// Which end of the TCP connection we are.
  package enum Role: Hashable, Sendable {
    /// We opened the connection (and will invite); `expecting` is the peer we dialled.
    case connector(expecting: PeerID?)
    /// We accepted the connection.
    case listener
  }

  package enum State: Hashable, Sendable {
    case awaitingHello
    case idle
    /// Connector: INVITE sent, waiting for the answer.
    case inviting(invitationID: UInt64)
    /// Listener: INVITE received, our answer is pending.
    case invited(invitationID: UInt64)
    /// Connector: RESUME sent for the session begun by this invitation id, waiting for the
    /// listener's RESUME (PROTOCOL.md 6.5).
    case resuming(session: UInt64)
    case connected
    /// GOODBYE or ERROR sent (or DECLINE sent): waiting for the peer to close.
    case closing
    case closed
  }

  package let role: Role
  package let localHello: Frame.Hello
  package let timeouts: ConnectionTimeouts
  package private(set) var state: State = .awaitingHello
  /// The peer's HELLO once received.
  package private(set) var remoteHello: Frame.Hello?
  /// The negotiated protocol version once HELLO was received.
  package private(set) var version: UInt8?
  /// Once `connected`: the invitation id of the INVITE that began the session this
  /// connection carries (a resumed session keeps its first one).
  package internal(set) var sessionID: UInt64?

  private var openedAt: Duration
  private var stateSince: Duration
  private var lastReceived: Duration
  var lastSent: Duration
  var invitationDeadline: Duration?
  /// The shell stopped reading (its application is behind): silence is ours, not the peer's.
  private var readingPaused = false
  private var nextPingNonce: UInt64 = 1
  private var outstandingPings: [(nonce: UInt64, sentAt: Duration)] = []

  /// - Parameters:
  ///   - role: connector or listener.
  ///   - hello: our HELLO (peer, versions, capabilities).
  ///   - now: the time the TCP connection was established.
  package init(role: Role, hello: Frame.Hello, timeouts: ConnectionTimeouts = ConnectionTimeouts(), now: Duration) {
    self.role = role
    self.localHello = hello
    self.timeouts = timeouts
    self.openedAt = now
    self.stateSince = now
    self.lastReceived = now
    self.lastSent = now
  }

  /// The remote peer, once its HELLO arrived.
  package var remotePeer: Peer? { remoteHello?.peer }
  /// Whether the remote peer said it is a relay.
  package var remoteIsRelay: Bool { remoteHello?.capabilities.contains(.relay) ?? false }
  package var isConnector: Bool { if case .connector = role { true } else { false } }

  /// The connection is up and its handshake starts. Version 2 sends no HELLO frame: each
  /// side's HELLO is the payload of its handshake, and the shell hands the peer's to
  /// ``receive(_:now:)`` once the handshake authenticated it. A HELLO arriving in the record
  /// stream afterwards is a protocol violation.
  package mutating func start(now: Duration) {
    lastSent = now
  }

  /// The shell stops or resumes reading the connection (flow control). While it does not
  /// read, nothing can arrive, so the dead-peer timeout does not run; it starts afresh when
  /// reading resumes.
  package mutating func readingPaused(_ paused: Bool, now: Duration) {
    readingPaused = paused
    if !paused, now > lastReceived { lastReceived = now }
  }

  /// Call whenever the shell sends a frame the machine did not produce (messages, acks),
  /// so that no needless PING goes out.
  package mutating func noteSent(now: Duration) {
    if now > lastSent { lastSent = now }
  }

  // MARK: Frames from the peer

  /// Handles one frame received from the peer.
  package mutating func receive(_ frame: Frame, now: Duration) -> ConnectionTransition {
    if state == .closed { return ConnectionTransition() }
    lastReceived = now
    if state == .closing {
      // Everything is read and discarded; an ERROR or GOODBYE just ends the linger early.
      switch frame {
      case .goodbye, .error: return close(.closedWhileClosing)
      default: return ConnectionTransition()
      }
    }
    switch frame {
    case .error(let code, let message):
      state = .closed
      return ConnectionTransition(event: .closed(.remoteError(code, message)), close: .now)
    case .goodbye(let reason):
      state = .closed
      return ConnectionTransition(event: .closed(.goodbye(reason)), close: .now)
    case .ping(let nonce):
      guard state != .awaitingHello else { return unexpected(frame) }
      lastSent = now
      return ConnectionTransition(send: .pong(nonce: nonce))
    case .pong(let nonce):
      guard state != .awaitingHello else { return unexpected(frame) }
      if let index = outstandingPings.firstIndex(where: { $0.nonce == nonce }) {
        let rtt = now - outstandingPings[index].sentAt
        outstandingPings.removeSubrange(...index)
        return ConnectionTransition(event: .roundTrip(rtt))
      }
      return ConnectionTransition()
    case .hello(let hello):
      guard state == .awaitingHello else { return unexpected(frame) }
      return receiveHello(hello, now: now)
    case .invite(let invite):
      guard state == .idle, role == .listener else { return unexpected(frame) }
      enter(.invited(invitationID: invite.invitationID), now: now)
      invitationDeadline = now + .milliseconds(Int64(invite.timeoutMilliseconds))
      return ConnectionTransition(event: .invited(invite))
    case .accept(let id):
      guard case .inviting(let pending) = state, pending == id else { return unexpected(frame) }
      invitationDeadline = nil
      enter(.connected, now: now)
      sessionID = id
      return ConnectionTransition(event: .accepted)
    case .decline(let id, let reason):
      guard pendingAnswer == id else { return unexpected(frame) }
      invitationDeadline = nil
      return closeWithGoodbye(.invitationDeclined, event: .declined(reason), now: now)
    case .message(let message):
      guard state == .connected else { return unexpected(frame) }
      if !remoteIsRelay, message.sender != remoteHello?.peer.id {
        return fail(.malformedFrame, "the MESSAGE sender \(message.sender.hex) does not match the connection's peer", now: now)
      }
      return ConnectionTransition(event: .message(message))
    case .delivered(let delivered):
      guard state == .connected else { return unexpected(frame) }
      return ConnectionTransition(event: .delivered(delivered))
    case .undeliverable(let report):
      guard state == .connected else { return unexpected(frame) }
      return ConnectionTransition(event: .undeliverable(report))
    case .roster(let roster):
      guard state == .connected, remoteIsRelay else { return unexpected(frame) }
      return ConnectionTransition(event: .roster(roster))
    case .verify:
      guard state == .connected else { return unexpected(frame) }
      return ConnectionTransition(event: .verificationRequested)
    case .resume(let resume):
      return receiveResume(resume, now: now) ?? unexpected(frame)
    case .file(let transfer):
      guard state == .connected else { return unexpected(frame) }
      return ConnectionTransition(event: .file(transfer))
    }
  }

  /// The bytes from the peer could not be decoded: ERROR and close.
  package mutating func receiveFailed(_ error: FrameDecodingError, now: Duration) -> ConnectionTransition {
    if state == .closed || state == .closing {
      return close(.protocolViolation(error.description))
    }
    if case .truncated = error {
      // The peer already closed; there is nobody to send ERROR to.
      return close(.protocolViolation(error.description))
    }
    return fail(error.errorCode, error.description, now: now)
  }

  /// The connection ended (EOF or a socket error) without GOODBYE.
  package mutating func connectionLost(_ detail: String) -> ConnectionTransition {
    switch state {
    case .closed: return ConnectionTransition()
    case .closing: return close(.closedWhileClosing)
    default: return close(.connectionLost(detail))
    }
  }

  private mutating func receiveHello(_ hello: Frame.Hello, now: Duration) -> ConnectionTransition {
    let version = min(localHello.maxVersion, hello.maxVersion)
    if version < max(localHello.minVersion, hello.minVersion) {
      return fail(
        .unsupportedVersion,
        "no common protocol version: we speak \(localHello.minVersion)-\(localHello.maxVersion), the peer \(hello.minVersion)-\(hello.maxVersion)",
        now: now)
    }
    if hello.peer.id == localHello.peer.id {
      return fail(.wrongPeer, "the peer has our own peer id \(hello.peer.id.hex)", now: now)
    }
    if case .connector(let expected?) = role, expected != hello.peer.id {
      return fail(.wrongPeer, "expected peer \(expected.hex), got \(hello.peer.id.hex)", now: now)
    }
    remoteHello = hello
    self.version = version
    enter(.idle, now: now)
    return ConnectionTransition(event: .helloReceived(hello))
  }

  // MARK: Local decisions

  /// Connector: sends the invitation once HELLO is done.
  /// - Returns: the INVITE to send, or nothing if the state does not allow it.
  package mutating func invite(_ invite: Frame.Invite, now: Duration) -> ConnectionTransition {
    guard state == .idle, isConnector else { return ConnectionTransition() }
    enter(.inviting(invitationID: invite.invitationID), now: now)
    invitationDeadline = now + .milliseconds(Int64(invite.timeoutMilliseconds))
    lastSent = now
    return ConnectionTransition(send: .invite(invite))
  }

  /// Listener: accepts the pending invitation.
  package mutating func accept(now: Duration) -> ConnectionTransition {
    guard case .invited(let id) = state else { return ConnectionTransition() }
    invitationDeadline = nil
    enter(.connected, now: now)
    sessionID = id
    lastSent = now
    return ConnectionTransition(send: .accept(invitationID: id), event: .accepted)
  }

  /// Listener: declines the pending invitation; the inviter closes the connection.
  package mutating func decline(_ reason: DeclineReason, now: Duration) -> ConnectionTransition {
    guard case .invited(let id) = state else { return ConnectionTransition() }
    invitationDeadline = nil
    enter(.closing, now: now)
    lastSent = now
    return ConnectionTransition(send: .decline(invitationID: id, reason: reason), close: .shutdownAndLinger)
  }

  /// Leaves: GOODBYE and close (before HELLO there is nothing to say: just close).
  package mutating func goodbye(_ reason: GoodbyeReason, now: Duration) -> ConnectionTransition {
    switch state {
    case .closed, .closing: return ConnectionTransition()
    case .awaitingHello:
      state = .closed
      return ConnectionTransition(event: .closed(.local(reason)), close: .now)
    default:
      return closeWithGoodbye(reason, event: .closed(.local(reason)), now: now)
    }
  }

  /// The secure layer gave up on the connection (a failed handshake, a record that did not
  /// decrypt, a cut stream): ERROR `answer` when there is one (the transport already sent
  /// the handshake's own), and close.
  package mutating func securityFailed(_ detail: String, answer: ErrorCode?, now: Duration) -> ConnectionTransition {
    guard state != .closed, state != .closing else { return ConnectionTransition() }
    if let answer { return fail(answer, detail, now: now, reason: .securityFailure(detail)) }
    enter(.closing, now: now)
    return ConnectionTransition(event: .closed(.securityFailure(detail)), close: .shutdownAndLinger)
  }

  /// Refuses the connection with an ERROR (for example `busy`) and closes.
  package mutating func reject(_ code: ErrorCode, _ message: String, now: Duration) -> ConnectionTransition {
    guard state != .closed, state != .closing else { return ConnectionTransition() }
    return fail(code, message, now: now)
  }

  // MARK: Time

  /// The earliest time at which ``tick(now:)`` has something to do.
  package var nextDeadline: Duration? {
    switch state {
    case .closed: return nil
    case .closing: return stateSince + timeouts.linger
    case .awaitingHello: return openedAt + timeouts.handshake
    default:
      var deadline = lastSent + timeouts.pingInterval
      if !readingPaused { deadline = min(deadline, lastReceived + timeouts.deadPeer) }
      if state == .idle, role == .listener { deadline = min(deadline, stateSince + timeouts.idle) }
      if let invitationDeadline { deadline = min(deadline, invitationDeadline) }
      return deadline
    }
  }

  /// Runs the timers: handshake, idle, invitation, heartbeat and linger.
  package mutating func tick(now: Duration) -> ConnectionTransition {
    switch state {
    case .closed:
      return ConnectionTransition()
    case .closing:
      if now >= stateSince + timeouts.linger { return close(.closedWhileClosing) }
      return ConnectionTransition()
    case .awaitingHello:
      if now >= openedAt + timeouts.handshake {
        return fail(.handshakeTimeout, "the handshake did not complete within \(timeouts.handshake)", now: now, reason: .handshakeTimeout)
      }
      return ConnectionTransition()
    default:
      break
    }
    if !readingPaused, now >= lastReceived + timeouts.deadPeer {
      return close(.timedOut(silentFor: now - lastReceived))
    }
    if let deadline = invitationDeadline, now >= deadline {
      invitationDeadline = nil
      switch state {
      case .inviting, .resuming:
        return closeWithGoodbye(.invitationTimeout, event: .declined(.timeout), now: now)
      case .invited(let id):
        enter(.closing, now: now)
        lastSent = now
        return ConnectionTransition(
          send: .decline(invitationID: id, reason: .timeout), event: .invitationExpired, close: .shutdownAndLinger)
      default:
        break
      }
    }
    if state == .idle, role == .listener, now >= stateSince + timeouts.idle {
      return closeWithGoodbye(.idle, event: .closed(.local(.idle)), now: now)
    }
    if now >= lastSent + timeouts.pingInterval {
      let nonce = nextPingNonce
      nextPingNonce &+= 1
      lastSent = now
      outstandingPings.append((nonce, now))
      if outstandingPings.count > 8 { outstandingPings.removeFirst() }
      return ConnectionTransition(send: .ping(nonce: nonce))
    }
    return ConnectionTransition()
  }

  // MARK: Helpers

  mutating func enter(_ newState: State, now: Duration) {
    state = newState
    stateSince = now
  }

  private mutating func unexpected(_ frame: Frame) -> ConnectionTransition {
    fail(.unexpectedFrame, "\(frame.type) is not allowed in state \(stateName)", now: lastReceived)
  }

  private mutating func fail(_ code: ErrorCode, _ message: String, now: Duration, reason: DisconnectReason? = nil) -> ConnectionTransition {
    enter(.closing, now: now)
    lastSent = now
    var text = message
    // Whole characters only: cutting the UTF-8 inside one would grow it back past the limit.
    while text.utf8.count > ProtocolLimits.maximumErrorMessageBytes { text.removeLast() }
    return ConnectionTransition(
      send: .error(code: code, message: text), event: .closed(reason ?? .protocolViolation("\(code): \(message)")),
      close: .shutdownAndLinger)
  }

  mutating func closeWithGoodbye(_ reason: GoodbyeReason, event: ConnectionEvent, now: Duration) -> ConnectionTransition {
    enter(.closing, now: now)
    lastSent = now
    return ConnectionTransition(send: .goodbye(reason), event: event, close: .shutdownAndLinger)
  }

  private mutating func close(_ reason: DisconnectReason) -> ConnectionTransition {
    let wasClosing = state == .closing
    state = .closed
    // After we sent GOODBYE/ERROR the event was already reported.
    return ConnectionTransition(event: wasClosing ? nil : .closed(reason), close: .now)
  }

  /// The state's name in the words of the specification.
  package var stateName: String {
    switch state {
    case .awaitingHello: "awaitingHello"
    case .idle: isConnector ? "idle (connector)" : "idle (listener)"
    case .inviting: "inviting"
    case .invited: "invited"
    case .resuming: "resuming"
    case .connected: "connected"
    case .closing: "closing"
    case .closed: "closed"
    }
  }
}

/// What a ``ConnectionStateMachine`` asks its shell to do. Any field may be empty.
package struct ConnectionTransition: Sendable {
  /// A frame to send (before closing, if ``close`` is set).
  package var send: Frame?
  /// Something to report to the session.
  package var event: ConnectionEvent?
  /// Whether and how to close.
  package var close: CloseAction?

  package init(send: Frame? = nil, event: ConnectionEvent? = nil, close: CloseAction? = nil) {
    self.send = send
    self.event = event
    self.close = close
  }
}

/// How to close a connection.
package enum CloseAction: Hashable, Sendable {
  /// Flush what is queued, shut down the write side, keep reading until EOF or linger.
  case shutdownAndLinger
  /// Close the socket now.
  case now
}

/// What happened on a connection, for the session.
package enum ConnectionEvent: Hashable, Sendable {
  case helloReceived(Frame.Hello)
  /// Listener: the peer invites us.
  case invited(Frame.Invite)
  /// Listener: our pending invitation timed out and was declined.
  case invitationExpired
  /// Both roles: the invitation was accepted; the connection is now `connected`.
  case accepted
  /// Connector: the invitation was declined (or timed out: `.timeout`).
  case declined(DeclineReason)
  case message(Frame.Message)
  case delivered(Frame.Delivered)
  case undeliverable(Frame.Undeliverable)
  case roster(Frame.Roster)
  case roundTrip(Duration)
  /// The peer's person asks to compare the verification code.
  case verificationRequested
  /// Listener: the peer asks to resume a session on this connection (answer at once).
  case resumeRequested(Frame.Resume)
  /// Connector: the listener resumed the session; the connection is now `connected`.
  case resumed(Frame.Resume)
  /// A step of a file transfer (PROTOCOL.md section 13).
  case file(TransferFrame)
  /// The connection is over.
  case closed(DisconnectReason)
}

/// Why a connection ended.
public enum DisconnectReason: Hashable, Sendable, CustomStringConvertible {
  /// The peer said GOODBYE.
  case goodbye(GoodbyeReason)
  /// The peer sent ERROR.
  case remoteError(ErrorCode, String)
  /// The peer broke the protocol; we sent ERROR.
  case protocolViolation(String)
  /// No HELLO in time.
  case handshakeTimeout
  /// Nothing received for too long.
  case timedOut(silentFor: Duration)
  /// EOF or a socket error without GOODBYE.
  case connectionLost(String)
  /// We closed it (GOODBYE with this reason).
  case local(GoodbyeReason)
  /// The connection ended after we had already said GOODBYE or ERROR.
  case closedWhileClosing
  /// Authentication or encryption failed: the handshake (a wrong key, a bad signature, a
  /// version 1 peer, ...) or the records (altered, replayed or cut). The text names the cause.
  case securityFailure(String)
  /// The session's connection was lost and it did not resume (PROTOCOL.md 6.5): the peer
  /// stayed away for longer than the grace period, or it no longer knew the session.
  case notResumed(String)

  public var description: String {
    switch self {
    case .goodbye(let reason):
      switch reason {
      case .leaving: return "left"
      case .shuttingDown: return "quit"
      default: return "said goodbye (\(reason))"
      }
    case .remoteError(let code, let message): return "sent error \(code): \(message)"
    case .protocolViolation(let detail): return "protocol error: \(detail)"
    case .handshakeTimeout: return "the handshake did not complete in time"
    case .securityFailure(let detail), .notResumed(let detail): return detail
    case .timedOut(let silence): return "timed out (silent for \(silence.formattedSeconds))"
    case .connectionLost(let detail): return "connection lost: \(detail)"
    case .local(let reason):
      switch reason {
      case .leaving: return "you left"
      case .shuttingDown: return "you quit"
      case .duplicate: return "a duplicate connection was closed"
      case .replaced: return "replaced by a new connection"
      case .idle: return "no invitation arrived"
      case .invitationTimeout: return "the invitation timed out"
      default: return "closed (\(reason))"
      }
    case .closedWhileClosing: return "closed"
    }
  }
}

extension Duration {
  /// `1.25 s`, for messages.
  package var formattedSeconds: String {
    let (seconds, attoseconds) = components
    let hundredths = Int64(attoseconds / 10_000_000_000_000_000)
    return "\(seconds).\(hundredths < 10 ? "0" : "")\(hundredths) s"
  }
}
