import NearbyCore
import NearbyTransport

/// Acknowledging what the application took: the hub settles a message's claim once every
/// reader took it; the session then counts it as taken (reading resumes, held-back messages
/// get their turn) and tells its sender, in batches. Runs on the session's I/O thread.
extension NearbySession {
  /// Called from whichever thread took the last copy of received messages: counts them on
  /// the loop, after everything of the current iteration, and acknowledges them (see
  /// ``acknowledgeTaken()``). `work` is ``ClaimsSettledSignal``'s, made once (a closure made
  /// here was a heap allocation per message).
  nonisolated func scheduleAcknowledgements(_ work: @escaping @Sendable () -> Void) {
    if loop.inLoop {
      loop.afterIteration(work)
    } else {
      loop.execute(work)
    }
  }

  /// The longest an acknowledgement waits for more to join it, and how many messages or
  /// bytes make it go at once. A request answered within microseconds (a ping-pong, a
  /// scripted exchange) used to cost a DELIVERED of its own each way: building, sealing,
  /// opening and settling one was about a seventh of the CPU time of a round trip. Waiting
  /// up to a millisecond lets dozens share one, as TCP's delayed acknowledgements do, and
  /// only delays delivery reports by as much (the resend window holds 16 MiB). Streams
  /// fill a batch at once and do not wait.
  static let acknowledgementDelay = Duration.milliseconds(1)
  static let acknowledgementBatch = (messages: 64, bytes: 64 << 10)

  /// What the application took: counted at once (reading resumes), acknowledged to the
  /// senders when a batch is full or ``acknowledgementDelay`` after the first of it.
  func acknowledgeTaken() {
    var claims = spareClaims
    spareClaims = []
    hub.takeSettledClaims(into: &claims)
    defer {
      claims.removeAll(keepingCapacity: claims.capacity <= Self.spareCapacity)
      spareClaims = claims
    }
    guard !claims.isEmpty else { return }
    // Per connection, not per claim (a batch is usually thousands of one connection's).
    var index = 0
    while index < claims.count {
      let connection = claims[index].taken.connection
      var messages = 0
      var bytes = 0
      while index < claims.count, claims[index].taken.connection == connection {
        pendingAcknowledgements.append(claims[index].taken)
        messages += 1
        bytes += claims[index].bytes
        index += 1
      }
      pendingAcknowledgementBytes += bytes
      guards.untakenBytes -= bytes
      guards.untakenMessages -= messages
      guard let slot = untaken.index(forKey: connection) else { continue }
      untaken.values[slot].messages -= messages
      untaken.values[slot].bytes -= bytes
      let count = untaken.values[slot]
      if let socket = connections[connection], socket.isReadingPaused, untakenAllowsReading(connection, count) {
        machine.readingPaused(connection, false, now: now)
        socket.resumeReading()
      }
    }
    resumeConnectionsPausedForAll()
    if !guards.heldBack.isEmpty { publishHeldBack() }
    if pendingAcknowledgements.count >= Self.acknowledgementBatch.messages || pendingAcknowledgementBytes >= Self.acknowledgementBatch.bytes {
      sendAcknowledgements()
    } else if !loop.inLoop {
      // The loop has stopped (its queue runs what is left): no timer would fire.
      sendAcknowledgements()
    } else if acknowledgementTimer == nil {
      acknowledgementTimer = loop.schedule(after: Self.acknowledgementDelay) { [self] in
        whileOnLoop { session in
          session.acknowledgementTimer = nil
          session.sendAcknowledgements()
        }
      }
    }
  }

  /// Sends the DELIVERED frames of what the application took and was not acknowledged yet.
  func sendAcknowledgements() {
    if let acknowledgementTimer { loop.cancelTimer(acknowledgementTimer) }
    acknowledgementTimer = nil
    guard !pendingAcknowledgements.isEmpty else { return }
    var actions = takeActions()
    defer { recycle(&actions) }
    machine.acknowledge(pendingAcknowledgements, now: now, into: &actions)
    pendingAcknowledgements.removeAll(keepingCapacity: pendingAcknowledgements.capacity <= Self.acknowledgementBatch.messages)
    pendingAcknowledgementBytes = 0
    perform(taking: &actions)
  }
}
