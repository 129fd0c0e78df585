import Nearby

/// One side of the exchange, driven by the session's events: find the other peer and invite
/// it (or accept its invitation), send it our message once connected, and finish when its
/// message has arrived and ours is confirmed delivered.
struct Exchange {
  let options: Options
  let started = ContinuousClock.now
  /// The other side, once connected.
  var partner: Peer?
  var invited = false
  var sent: MessageID?
  var delivered = false
  var received = false

  init(options: Options) { self.options = options }

  var timedOut: Bool { ContinuousClock.now - started >= options.timeout }

  /// What is missing, for the message when the session ends first.
  var stillWaiting: String {
    let other = options.partnerName ?? "a peer"
    let step =
      if partner == nil {
        switch options.role {
        case .invite: invited ? "for \(other) to accept the invitation" : "for \(other) to be found (is it running, with the same service type?)"
        case .accept: "for an invitation from \(other) (is it running, with the same service type?)"
        }
      } else if !received {
        "for a message from \(other)"
      } else {
        "for \(other) to confirm delivery of our message"
      }
    return "while waiting \(step)"
  }

  /// Handles one event. - Returns: the exit code once the exchange is over, else nil.
  mutating func handle(_ event: SessionEvent, session: NearbySession) async -> Int32? {
    switch event {
    case .status(.listening(let port)):
      say("\(options.name) (\(session.configuration.peer.id.shortHex)) listening on port \(port), service \(options.service)")
    case .status(.advertised(let name)):
      say("advertised as \"\(name)\"")
    case .status(.advertisingFailed(let reason)), .status(.browsingFailed(let reason)):
      printError("\(reason) (retrying)")

    case .found(let discovered):
      say("found \(discovered.peer) at \(discovered.hostName)")
      if case .invite(let name) = options.role, !invited, Self.matches(discovered.peer, name) {
        invited = true
        say("inviting \(discovered.peer)")
        await session.invite(discovered.peer.id, context: Array("hello from \(options.name)".utf8))
      }
    case .invitation(let invitation):
      let note = String(decoding: invitation.context, as: UTF8.self)
      if case .accept(let name) = options.role, partner == nil, name.map({ Self.matches(invitation.peer, $0) }) ?? true {
        say("accepting the invitation of \(invitation.peer) (\"\(note)\")")
        await session.accept(invitation.peer.id)
      } else {
        say("declining the invitation of \(invitation.peer)")
        await session.decline(invitation.peer.id)
      }

    case .connected(let peer, _) where partner == nil && options.partnerName.map({ Self.matches(peer, $0) }) ?? true:
      partner = peer
      say("connected to \(peer)")
      do {
        // Returns once queued (it suspends while the peer's queue is full); delivery is
        // confirmed later by a `.delivered` event.
        let id = try await session.send(Array(options.message.utf8), to: .peer(peer.id))
        sent = id
        say("sent message \(id) to \(peer.name): \"\(options.message)\"")
      } catch {
        printError("could not send to \(peer): \(error)")
        return 1
      }
    case .message(let message) where message.from.id == partner?.id:
      received = true
      say("\(message.from.name): \"\(String(decoding: message.body, as: UTF8.self))\"")
    case .delivered(let id, let peer) where id == sent:
      delivered = true
      say("\(peer.name) confirmed delivery of message \(id)")

    case .declined(let peer, let reason):
      printError("\(peer) declined the invitation (\(reason))")
      return 1
    case .disconnected(let peer, let reason) where peer.id == partner?.id:
      printError("\(peer) left before the exchange was over (\(reason))")
      return 1
    case .error(.undelivered(let id, _, _, let reason)) where id == sent:
      printError("message \(id) was not delivered: \(reason)")
      return 1
    case .error(let error):
      printError("\(error)")
    default:
      break
    }
    if received && delivered {
      say("done: one message each way, both delivered")
      return 0
    }
    return nil
  }

  /// Names match in any case.
  static func matches(_ peer: Peer, _ name: String) -> Bool {
    peer.name.value.lowercased() == name.lowercased()
  }
}
