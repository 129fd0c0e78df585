// One file: the simulated network is one value (nodes, links, the delivery queue, the
// virtual clock) whose stepping and bookkeeping go together, with the few helpers every test
// on it needs (a send like the session's, event kinds, the stand-in end-to-end crypto);
// its faults are in SimulatedNetwork+Faults.swift.

import NearbyCore

/// Several session state machines wired together through the real codec, with a virtual
/// clock and an explicit, deterministic delivery order. Endpoints are `Endpoint(host:
/// "<peer id hex>", port: 1)`; the network delivers queued items first in, first out.
///
/// The handshake of protocol version 2 is stood in for: once a connection is up, each end
/// is told the other is authenticated, with the other's real HELLO payload (the transport's
/// handshake is tested on its own, with real sockets).
struct SimulatedNetwork {
  enum Delivery {
    case accepted(PeerID, ConnectionID, remote: PeerID, remoteConnection: ConnectionID)
    case established(PeerID, ConnectionID)
    case bytes(PeerID, ConnectionID, [UInt8])
    case eof(PeerID, ConnectionID)
    case connectFailed(PeerID, ConnectionID)
    case authenticated(PeerID, ConnectionID, AuthenticatedPeer)

    /// The receiving end, whose deliveries must stay in order.
    var link: Link {
      switch self {
      case .accepted(let node, let connection, _, _), .established(let node, let connection), .bytes(let node, let connection, _),
        .eof(let node, let connection), .connectFailed(let node, let connection), .authenticated(let node, let connection, _):
        Link(node: node, connection: connection)
      }
    }
  }

  struct Link: Hashable {
    let node: PeerID
    let connection: ConnectionID
  }

  var nodes: [PeerID: SessionStateMachine] = [:]
  var events: [PeerID: [SessionEvent]] = [:]
  var queue: [Delivery] = []
  var links: [Link: Link] = [:]
  /// Links whose socket we closed: bytes to them are dropped.
  var closed: Set<Link> = []
  /// Bytes sent on these links vanish (a pulled cable).
  var silenced: Set<Link> = []
  var unreachable: Set<PeerID> = []
  /// Pairs of nodes that cannot reach each other (``partition(_:_:)``).
  var partitioned: Set<[PeerID]> = []
  var decoders: [Link: FrameDecoder] = [:]
  var now: Duration = .zero
  var framesSent: [Link: [Frame]] = [:]
  /// Messages handed to an application and not taken yet (nodes in `slowApplications`).
  var untaken: [PeerID: [TakenMessage]] = [:]
  /// Nodes whose application does not take messages until ``take(messagesAt:)``.
  var slowApplications: Set<PeerID> = []
  /// Nodes whose ROSTER frames are dropped on arrival (a relay's roster that never comes).
  var rostersDropped: Set<PeerID> = []
  /// Per node, peers whose entries are taken out of the `full` ROSTER frames it receives and
  /// kept in ``rosterRest``: the later frames of a full roster of several frames, still on
  /// their way (``deliverRosterRest(to:)`` hands them on).
  var rosterEntriesLate: [PeerID: Set<PeerID>] = [:]
  /// Entries taken out of full rosters (``rosterEntriesLate``), per node, with the connection
  /// they came on.
  var rosterRest: [PeerID: [(connection: ConnectionID, entry: Frame.Roster.Entry)]] = [:]
  /// Delivery reports of settled messages, per node.
  var settled: [PeerID: [DeliveryReport]] = [:]
  /// FILE frames each node's machine handed to its shell, with their sender.
  var transferFrames: [PeerID: [(TransferFrame, PeerID)]] = [:]
  /// Peers whose session moved to a new connection without a suspension, per node.
  var moved: [PeerID: [PeerID]] = [:]
  /// The host a node connects from (the source its connections are accepted from): its own
  /// by default, one address per node.
  var hosts: [PeerID: String] = [:]
  /// What federated relays asked of the federation, in order (``SimulatedFederation`` takes it).
  var federationOutputs: [(relay: PeerID, output: FederationOutput)] = []

  mutating func add(_ peer: Peer, policy: AcceptPolicy = .ask, configure: (inout SessionStateMachine.Configuration) -> Void = { _ in }) {
    var configuration = SessionStateMachine.Configuration(local: peer)
    configuration.acceptPolicy = policy
    configuration.endToEnd = SimulatedEndToEnd(local: peer.id)
    configure(&configuration)
    nodes[peer.id] = SessionStateMachine(configuration: configuration, messageIDSeed: 100, invitationIDSeed: 1)
    nodes[peer.id]!.reportsSettlements = true
    events[peer.id] = []
    // A node added again is a restarted process: its old sockets are gone.
    for (link, remote) in links where link.node == peer.id || remote.node == peer.id {
      links[link] = nil
      closed.remove(link)
      silenced.remove(link)
      decoders[link] = nil
    }
  }

  /// Makes every node discover every other one.
  mutating func discoverAll() {
    let all = nodes.keys.sorted()
    for node in all {
      for other in all where other != node {
        let peer = nodes[other]!.localPeer
        let found = DiscoveredPeer(
          advertisement: PeerAdvertisement(peer: peer), hostName: "\(peer.name).local.", endpoints: [Endpoint(host: other.hex, port: 1)])
        act(node) { machine, actions, now in machine.discovered(found, into: &actions) }
      }
    }
  }

  /// Runs an input on one node and performs the resulting actions. Messages handed to the
  /// application are taken at once (unless the node is a slow application) and acknowledged
  /// at the end, as the session does at the end of a loop iteration.
  @discardableResult
  mutating func act<R>(_ node: PeerID, _ body: (inout SessionStateMachine, inout [SessionAction], Duration) -> R) -> R {
    var actions: [SessionAction] = []
    let time = now
    let result = body(&nodes[node]!, &actions, time)
    perform(actions, at: node)
    if !slowApplications.contains(node), let taken = untaken.removeValue(forKey: node), !taken.isEmpty {
      var acknowledgements: [SessionAction] = []
      nodes[node]!.acknowledge(taken, now: time, into: &acknowledgements)
      perform(acknowledgements, at: node)
    }
    return result
  }

  /// A slow application finally takes the messages it was handed.
  mutating func take(messagesAt node: PeerID) {
    guard let taken = untaken.removeValue(forKey: node), !taken.isEmpty else { return }
    act(node) { machine, actions, now in machine.acknowledge(taken, now: now, into: &actions) }
  }

  mutating func perform(_ actions: [SessionAction], at node: PeerID) {
    for action in actions {
      switch action {
      case .connect(let connection, let endpoints):
        guard let target = PeerID(hex: endpoints[0].host), nodes[target] != nil, !unreachable.contains(target),
          !partitioned.contains([node, target].sorted())
        else {
          queue.append(.connectFailed(node, connection))
          continue
        }
        let remote = nodes[target]!.reserveConnectionID()
        links[Link(node: node, connection: connection)] = Link(node: target, connection: remote)
        links[Link(node: target, connection: remote)] = Link(node: node, connection: connection)
        queue.append(.accepted(target, remote, remote: node, remoteConnection: connection))
        queue.append(.established(node, connection))
        // The responder completes the handshake first (on message 3), the initiator on message 4.
        queue.append(.authenticated(target, remote, credentials(of: node)))
        queue.append(.authenticated(node, connection, credentials(of: target)))
      case .send(let connection, let frame):
        framesSent[Link(node: node, connection: connection), default: []].append(frame)
        send(FrameEncoder.encode(frame), from: Link(node: node, connection: connection))
      case .sendMessage(let message, let connections):
        var bytes: [UInt8] = []
        FrameEncoder.encodeMessage(message, into: &bytes)
        for connection in connections {
          framesSent[Link(node: node, connection: connection), default: []].append(.message(message))
          send(bytes, from: Link(node: node, connection: connection))
        }
      case .resendMessages(let messages, let connection):
        for message in messages {
          framesSent[Link(node: node, connection: connection), default: []].append(.message(message))
          var bytes: [UInt8] = []
          FrameEncoder.encodeMessage(message, into: &bytes)
          send(bytes, from: Link(node: node, connection: connection))
        }
      case .close(let connection, _):
        let link = Link(node: node, connection: connection)
        guard !closed.contains(link) else { continue }
        closed.insert(link)
        // A silenced link swallows its end too (the other side never hears of it).
        if let remote = links[link], !silenced.contains(link) { queue.append(.eof(remote.node, remote.connection)) }
      case .emit(let event), .emitFresh(let event):
        events[node, default: []].append(event)
      case .deliver(let message, let connection):
        events[node, default: []].append(.message(message))
        untaken[node, default: []].append(TakenMessage(connection: connection, origin: message.from.id, id: message.id.rawValue))
      case .settled(let report):
        settled[node, default: []].append(report)
      case .transferFrame(let frame, let peer, _):
        transferFrames[node, default: []].append((frame, peer))
      case .federate(let output):
        federationOutputs.append((node, output))
      case .sessionMoved(let peer):
        moved[node, default: []].append(peer)
      }
    }
  }

  /// What a handshake with `node` would prove: its id (a stand-in key) and its HELLO.
  func credentials(of node: PeerID) -> AuthenticatedPeer {
    AuthenticatedPeer(publicKey: Self.key(of: node), peerID: node, payload: nodes[node]!.helloPayload, verificationCode: "123456")
  }

  /// The stand-in key of a node: its id in the first 16 bytes (``SimulatedEndToEnd`` checks that).
  static func key(of node: PeerID) -> [UInt8] {
    var key = [UInt8](repeating: 0xEE, count: 32)
    withUnsafeBytes(of: node) { key.replaceSubrange(0..<$0.count, with: $0) }
    return key
  }

  private mutating func send(_ bytes: [UInt8], from link: Link) {
    guard !closed.contains(link), !silenced.contains(link), let remote = links[link] else { return }
    queue.append(.bytes(remote.node, remote.connection, bytes))
  }

  /// Delivers queued items until nothing is left (bounded, so a livelock fails the test).
  mutating func run(limit: Int = 100_000) {
    var steps = 0
    while !queue.isEmpty && steps < limit {
      step()
      steps += 1
    }
    precondition(steps < limit, "the simulated network did not settle")
  }

  /// Like ``run(limit:)``, but each step delivers a random item among those that may go
  /// next: what one connection receives stays in order, different connections interleave.
  mutating func runShuffled(seed: UInt64, limit: Int = 100_000) {
    var generator = SeededGenerator(seed: seed)
    var steps = 0
    while !queue.isEmpty && steps < limit {
      var seen: Set<Link> = []
      var eligible: [Int] = []
      for (index, delivery) in queue.enumerated() where seen.insert(delivery.link).inserted { eligible.append(index) }
      let delivery = queue.remove(at: eligible.randomElement(using: &generator)!)
      queue.insert(delivery, at: 0)
      step()
      steps += 1
    }
    precondition(steps < limit, "the simulated network did not settle")
  }

  mutating func step() {
    let delivery = queue.removeFirst()
    switch delivery {
    case .accepted(let node, let connection, let remote, _):
      let source = hosts[remote] ?? remote.hex
      act(node) { machine, actions, now in machine.connectionAccepted(connection, source: source, now: now, into: &actions) }
    case .established(let node, let connection):
      let reached = links[Link(node: node, connection: connection)].map { Endpoint(host: $0.node.hex, port: 1) }
      act(node) { machine, actions, now in machine.connectionEstablished(connection, remote: reached, now: now, into: &actions) }
    case .connectFailed(let node, let connection):
      act(node) { machine, actions, now in machine.connectFailed(connection, detail: "Connection refused", now: now, into: &actions) }
    case .authenticated(let node, let connection, let peer):
      guard !closed.contains(Link(node: node, connection: connection)) else { return }
      act(node) { machine, actions, now in machine.authenticated(connection, peer, now: now, into: &actions) }
    case .bytes(let node, let connection, let bytes):
      let link = Link(node: node, connection: connection)
      guard !closed.contains(link) else { return }
      let decoder = decoders[link] ?? FrameDecoder()
      decoders[link] = decoder
      decoder.append(bytes)
      var frames: [Frame] = []
      var failure: FrameDecodingError?
      do {
        while let frame = try decoder.next() {
          if case .roster = frame, rostersDropped.contains(node) { continue }
          if case .roster(var roster) = frame, roster.kind == .full, let late = rosterEntriesLate[node] {
            rosterRest[node, default: []] += roster.entries.filter { late.contains($0.peer.id) }.map { (connection, $0) }
            roster.entries.removeAll { late.contains($0.peer.id) }
            frames.append(.roster(roster))
            continue
          }
          frames.append(frame)
        }
      } catch {
        failure = error
      }
      act(node) { machine, actions, time in
        machine.received(frames, on: connection, now: time, into: &actions)
        if let failure { machine.receiveFailed(failure, on: connection, now: time, into: &actions) }
      }
    case .eof(let node, let connection):
      let link = Link(node: node, connection: connection)
      guard !closed.contains(link) else { return }
      closed.insert(link)
      if let remote = links[link], !closed.contains(remote) { queue.append(.eof(remote.node, remote.connection)) }
      act(node) { machine, actions, now in machine.connectionClosed(connection, detail: "end of stream", now: now, into: &actions) }
    }
  }

  /// Advances the clock in steps, running timers and deliveries.
  mutating func advance(by duration: Duration, step: Duration = .milliseconds(100)) {
    let end = now + duration
    while now < end {
      now = min(now + step, end)
      for node in nodes.keys.sorted() {
        act(node) { machine, actions, now in machine.tick(now: now, into: &actions) }
      }
      run()
    }
  }

  /// The rest of the full rosters `node` received (``rosterEntriesLate``) arrives now: each
  /// connection's as one `add` frame, as a relay sends the frames after a full roster's first.
  mutating func deliverRosterRest(to node: PeerID) {
    let rest = rosterRest.removeValue(forKey: node) ?? []
    for connection in Set(rest.map(\.connection)).sorted() {
      let roster = Frame.Roster(kind: .add, entries: rest.filter { $0.connection == connection }.map(\.entry))
      act(node) { machine, actions, now in machine.received([.roster(roster)], on: connection, now: now, into: &actions) }
    }
    run()
  }

  /// Removes and returns the events a node reported so far.
  mutating func take(_ node: PeerID) -> [SessionEvent] {
    defer { events[node] = [] }
    return events[node] ?? []
  }

  func connectedNames(_ node: PeerID) -> [String] { nodes[node]!.connectedPeers.map(\.name.value) }

  /// How many open (not closed) links a node has.
  func openLinks(_ node: PeerID) -> Int {
    links.keys.filter { $0.node == node && !closed.contains($0) }.count
  }
}

extension SessionStateMachine {
  /// Sends like the session does (one peer over its own session by its direct route, the
  /// rest by a routing); a send that throws is recorded as a `rejected` error event (as the
  /// chat shows it) and gives message id 0.
  @discardableResult
  mutating func send(_ body: [UInt8], to recipients: Recipients, timestamp: UInt64, now: Duration, into actions: inout [SessionAction])
    -> MessageID
  {
    if body.count <= ProtocolLimits.maximumBodyLength, let route = directRoute(recipients) {
      let (id, message) = sendMessage(body, direct: route, timestamp: timestamp, now: now)
      actions.append(.sendMessage(message, [route.connection]))
      return id
    }
    do {
      return try sendMessage(body, to: recipients, timestamp: timestamp, now: now, into: &actions).id
    } catch {
      actions.append(.emit(.error(.rejected(error.description))))
      return 0
    }
  }
}

extension SessionEvent {
  /// A short name for assertions.
  var kind: String {
    switch self {
    case .found: "found"
    case .updated: "updated"
    case .lost: "lost"
    case .invitation: "invitation"
    case .invitationWithdrawn: "invitationWithdrawn"
    case .connecting: "connecting"
    case .connected: "connected"
    case .declined: "declined"
    case .reconnecting: "reconnecting"
    case .reconnected: "reconnected"
    case .disconnected: "disconnected"
    case .message: "message"
    case .delivered: "delivered"
    case .queued: "queued"
    case .error: "error"
    case .reachable: "reachable"
    case .unreachable: "unreachable"
    case .status: "status"
    case .verification: "verification"
    case .trusted: "trusted"
    case .impostorWarning: "impostorWarning"
    case .transfer: "transfer"
    }
  }
}

/// A stand-in for the end-to-end cryptography, for the state machine's tests: a key "owns"
/// an id when it starts with the id's bytes (``SimulatedNetwork/key(of:)``), and envelopes
/// and receipts carry a checksum of everything the real signature covers, so a relay that
/// changes a byte is caught. (The real one, over libsodium, is tested with real sessions.)
struct SimulatedEndToEnd: EndToEndCrypto {
  let local: PeerID

  func owns(_ publicKey: [UInt8], _ id: PeerID) -> Bool { publicKey == SimulatedNetwork.key(of: id) }

  func seal(_ body: [UInt8], header: EnvelopeHeader, toEveryone: Bool, recipientKeys: [[UInt8]]) -> Result<[UInt8], EndToEndError> {
    for (recipient, key) in zip(header.recipients, recipientKeys) where !owns(key, recipient) {
      return .failure(EndToEndError("recipientKeyMismatch", "the key given for \(recipient.hex) is not its own"))
    }
    var sealed: [UInt8] = [0x53, toEveryone ? 1 : 0] + body
    sealed += Self.checksum(header, sealed)
    return .success(sealed)
  }

  func verify(_ envelope: [UInt8], header: EnvelopeHeader, originKey: [UInt8]) -> Result<Void, EndToEndError> {
    guard owns(originKey, header.origin), envelope.count >= 10, envelope[0] == 0x53 else {
      return .failure(EndToEndError("malformed", "not a simulated envelope"))
    }
    guard Array(envelope.suffix(8)) == Self.checksum(header, Array(envelope.dropLast(8))) else {
      return .failure(EndToEndError("invalidSignature", "the checksum does not match"))
    }
    return .success(())
  }

  func open(_ envelope: [UInt8], header: EnvelopeHeader, originKey: [UInt8]) -> Result<OpenedEnvelope, EndToEndError> {
    if case .failure(let error) = verify(envelope, header: header, originKey: originKey) { return .failure(error) }
    guard header.recipients.contains(local) else { return .failure(EndToEndError("notARecipient", "not for \(local.hex)")) }
    return .success(OpenedEnvelope(body: Array(envelope[2..<(envelope.count - 8)]), toEveryone: envelope[1] == 1))
  }

  func signReceipt(origin: PeerID, ids: [UInt64]) -> [UInt8] {
    let header = EnvelopeHeader(origin: origin, messageID: 0, timestamp: 0, recipients: [local])
    var signature = Self.checksum(header, ids.flatMap { withUnsafeBytes(of: $0.bigEndian, Array.init) })
    signature += [UInt8](repeating: 0, count: 56)
    return signature
  }

  func isValidReceipt(_ signature: [UInt8], origin: PeerID, recipient: PeerID, ids: [UInt64], recipientKey: [UInt8]) -> Bool {
    guard owns(recipientKey, recipient) else { return false }
    let header = EnvelopeHeader(origin: origin, messageID: 0, timestamp: 0, recipients: [recipient])
    return signature.count == 64 && Array(signature.prefix(8)) == Self.checksum(header, ids.flatMap { withUnsafeBytes(of: $0.bigEndian, Array.init) })
  }

  /// FNV-1a over the header and the bytes.
  static func checksum(_ header: EnvelopeHeader, _ bytes: [UInt8]) -> [UInt8] {
    var hash: UInt64 = 0xcbf2_9ce4_8422_2325
    func mix(_ data: some Sequence<UInt8>) {
      for byte in data {
        hash ^= UInt64(byte)
        hash = hash &* 0x100_0000_01b3
      }
    }
    withUnsafeBytes(of: header.origin) { mix($0) }
    withUnsafeBytes(of: header.messageID.bigEndian) { mix($0) }
    withUnsafeBytes(of: header.timestamp.bigEndian) { mix($0) }
    for recipient in header.recipients { withUnsafeBytes(of: recipient) { mix($0) } }
    mix(bytes)
    return withUnsafeBytes(of: hash.bigEndian, Array.init)
  }
}
