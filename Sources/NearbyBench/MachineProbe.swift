import NearbyCore

/// Diagnostics for the benchmark: the cost of the protocol's state machines alone (no
/// sockets, no threads) for one message and its acknowledgement, through the real codec.
enum MachineProbe {
  /// - Returns: nanoseconds per message (send, encode, decode, receive, hand to the
  ///   application, acknowledge, settle).
  static func nanosecondsPerMessage(count: Int) throws -> Double {
    let alice = Peer(id: PeerID(high: 1, low: 1), name: try DisplayName("alice"))
    let bob = Peer(id: PeerID(high: 2, low: 2), name: try DisplayName("bob"))
    var a = SessionStateMachine(configuration: .init(local: alice), messageIDSeed: 1, invitationIDSeed: 1)
    var configuration = SessionStateMachine.Configuration(local: bob)
    configuration.acceptPolicy = .all
    var b = SessionStateMachine(configuration: configuration, messageIDSeed: 1, invitationIDSeed: 1)
    let ab = ConnectionID(1 << 63 | 1)
    let ba = ConnectionID(1)
    let toB = FrameDecoder()
    let toA = FrameDecoder()
    var actions: [SessionAction] = []
    var now = Duration.zero

    // Carries what the actions send, and takes delivered messages at once.
    func pump() throws {
      var moved = true
      while moved {
        moved = false
        for (source, decoder, connection, isA) in [(0, toB, ba, false), (1, toA, ab, true)] {
          _ = source
          var frames: [Frame] = []
          while let frame = try decoder.next() { frames.append(frame) }
          guard !frames.isEmpty else { continue }
          moved = true
          var produced: [SessionAction] = []
          if isA {
            a.received(frames, on: connection, now: now, into: &produced)
          } else {
            b.received(frames, on: connection, now: now, into: &produced)
          }
          route(produced, fromA: isA)
        }
      }
    }
    func route(_ produced: [SessionAction], fromA: Bool) {
      var taken: [TakenMessage] = []
      for action in produced {
        switch action {
        case .send(_, let frame): (fromA ? toB : toA).append(FrameEncoder.encode(frame))
        case .sendMessage(let message, _):
          var bytes: [UInt8] = []
          FrameEncoder.encodeMessage(message, into: &bytes)
          (fromA ? toB : toA).append(bytes)
        case .deliver(let message, let connection):
          taken.append(TakenMessage(connection: connection, origin: message.from.id, id: message.id.rawValue))
        default: break
        }
      }
      if !taken.isEmpty {
        var more: [SessionAction] = []
        if fromA { a.acknowledge(taken, now: now, into: &more) } else { b.acknowledge(taken, now: now, into: &more) }
        route(more, fromA: fromA)
      }
    }

    // Handshake: a connects to b and invites it.
    a.invite(endpoints: [Endpoint(host: "127.0.0.1", port: 1)], context: [], into: &actions)
    let outbound = actions.compactMap { if case .connect(let id, _) = $0 { id } else { nil } }.first ?? ab
    precondition(outbound == ab)
    actions.removeAll()
    b.connectionAccepted(ba, now: now, into: &actions)
    route(actions, fromA: false)
    actions.removeAll()
    a.connectionEstablished(ab, now: now, into: &actions)
    route(actions, fromA: true)
    actions.removeAll()
    try pump()
    precondition(a.isConnected(bob.id), "the probe's sessions did not connect")

    let body = [UInt8](repeating: 0x61, count: 64)
    let clock = ContinuousClock()
    let start = clock.now
    for index in 0..<count {
      now = .milliseconds(Int64(index / 1000))
      actions.removeAll(keepingCapacity: true)
      _ = try a.sendMessage(body, to: .peers([bob.id]), timestamp: 0, now: now, into: &actions)
      route(actions, fromA: true)
      try pump()
    }
    let elapsed = clock.now - start
    precondition(!a.hasPendingDeliveries, "messages were not acknowledged")
    return elapsed.seconds * 1e9 / Double(count)
  }
}
