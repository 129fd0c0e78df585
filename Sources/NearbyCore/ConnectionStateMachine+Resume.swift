/// Resuming a session on a new connection (PROTOCOL.md 6.5): the connector sends RESUME in
/// `idle` instead of INVITE and waits in `resuming`; the listener answers at once, with its
/// own RESUME (both are then `connected`) or with DECLINE `unknownSession`.
extension ConnectionStateMachine {
  /// The id an answer (DECLINE; ACCEPT only in `inviting`) must carry in the current state.
  var pendingAnswer: UInt64? {
    switch state {
    case .inviting(let id): id
    case .resuming(let session): session
    default: nil
    }
  }

  /// Whether our HELLO announces that we resume sessions.
  package var offersResumption: Bool { localHello.capabilities.contains(.resume) }

  /// Whether the peer's HELLO announced that it resumes sessions.
  package var peerOffersResumption: Bool { remoteHello?.capabilities.contains(.resume) ?? false }

  /// A RESUME from the peer. - Returns: `nil` when it is not legal here (the caller answers
  /// `unexpectedFrame`).
  mutating func receiveResume(_ resume: Frame.Resume, now: Duration) -> ConnectionTransition? {
    switch state {
    case .idle where role == .listener && offersResumption:
      // The session decides at once: ``answerResume(_:now:)`` or ``refuseResume(now:)``.
      return ConnectionTransition(event: .resumeRequested(resume))
    case .resuming(let session) where resume.session == session:
      invitationDeadline = nil
      enter(.connected, now: now)
      sessionID = session
      return ConnectionTransition(event: .resumed(resume))
    default:
      return nil
    }
  }

  /// Connector: asks the listener to resume the session (instead of inviting). The answer
  /// is due within the handshake timeout.
  package mutating func resume(_ resume: Frame.Resume, now: Duration) -> ConnectionTransition {
    guard state == .idle, isConnector else { return ConnectionTransition() }
    enter(.resuming(session: resume.session), now: now)
    invitationDeadline = now + timeouts.handshake
    lastSent = now
    return ConnectionTransition(send: .resume(resume))
  }

  /// Listener: the session resumes on this connection; `answer` says what we have.
  package mutating func answerResume(_ answer: Frame.Resume, now: Duration) -> ConnectionTransition {
    guard state == .idle, role == .listener else { return ConnectionTransition() }
    enter(.connected, now: now)
    sessionID = answer.session
    lastSent = now
    return ConnectionTransition(send: .resume(answer))
  }

  /// Listener: we do not know the session the peer wants to resume (DECLINE `unknownSession`).
  package mutating func refuseResume(_ session: UInt64, now: Duration) -> ConnectionTransition {
    guard state == .idle, role == .listener else { return ConnectionTransition() }
    enter(.closing, now: now)
    lastSent = now
    return ConnectionTransition(send: .decline(invitationID: session, reason: .unknownSession), close: .shutdownAndLinger)
  }
}
