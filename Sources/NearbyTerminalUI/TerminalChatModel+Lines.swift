import Nearby
import NearbyChat

extension TerminalChatModel {
  /// Puts a chat line into the conversation it belongs to: a private message into the one
  /// with its peer (opened if needed), a public one and news about the session and peers into
  /// the one with everyone (news about a peer also into the one with that peer; a warning
  /// about an impostor into the one with the peer it pretends to be), answers to
  /// commands into the one shown. Rings the bell for a private message, an invitation or a
  /// mention of our name that lands in a conversation not shown.
  mutating func show(_ line: ChatLine, into screen: inout String, effects: inout [Effect]) {
    var previousName: String?
    if case .event(.updated(let discovered)) = line {
      previousName = (roster.found[discovered.peer.id] ?? roster.connected[discovered.peer.id])?.name.value
    }
    roster.apply(line)
    styler.names.note(line)
    switch line {
    case .ready(let peer, _, _):
      styler.me = peer
      add(styler.entries(for: line, now: now), to: 0)
    case .event(.message(let message)):
      receive(message, into: &screen, effects: &effects)
    case .sent(let id, let text, let peers, let isPrivate):
      sent(id, text: text, to: peers, isPrivate: isPrivate, effects: &effects)
    case .settled(let report):
      guard let lines = outgoing.removeValue(forKey: report.messageID) else { return }
      setMark(report.isDelivered ? .delivered : .failed, on: lines)
      let logs = alsoLogged.removeValue(forKey: report.messageID) ?? lines.first.map { [$0.conversation] } ?? []
      for log in logs {
        effects.append(.log(log, LogRecord(time: now, kind: report.isDelivered ? .delivered : .failed, messageID: report.messageID)))
      }
    case .event(.delivered):
      // The mark on the message changes once every recipient has answered (.settled, which
      // may come before or after this): no line of its own.
      return
    case .event(.error(.undelivered(let id, _, _, _))):
      let lines = outgoing[id] ?? []
      setMark(.failed, on: lines)
      let index = lines.first.flatMap { reference in conversations.firstIndex { $0.id == reference.conversation } } ?? current
      add(styler.entries(for: line, now: now), to: index)
    case .event(.queued(let id, _)):
      // Kept for a peer who is offline: marked `~` until it is delivered or expires (.settled),
      // the notice beside the message.
      let lines = outgoing[id] ?? []
      setMark(.queued, on: lines)
      let index = lines.first.flatMap { reference in conversations.firstIndex { $0.id == reference.conversation } } ?? current
      add(styler.entries(for: line, now: now), to: index)
    case .event(.invitation(let invitation)):
      add(styler.entries(for: line, now: now), to: 0, alsoFor: invitation.peer.id)
      if current != 0 && conversations[current].id != .peer(invitation.peer.id) { ring(&screen) }
    case .event(.updated(let discovered)):
      if let index = conversations.firstIndex(where: { $0.id == .peer(discovered.peer.id) }) {
        conversations[index].title = discovered.peer.name.value
        conversations[index].peer = discovered.peer
      }
      add(styler.entries(for: line, now: now, previousName: previousName), to: 0)
    case .event(.connected(let peer, _)), .event(.disconnected(let peer, _)), .event(.reconnecting(let peer, _)), .event(.reconnected(let peer)),
      .event(.declined(let peer, _)), .event(.lost(let peer)),
      .event(.invitationWithdrawn(let peer, _)), .event(.reachable(let peer, _)), .event(.unreachable(let peer)),
      .event(.verification(let peer, _, _)), .event(.trusted(let peer)), .event(.impostorWarning(_, verified: let peer)):
      add(styler.entries(for: line, now: now), to: 0, alsoFor: peer.id)
    case .event(.transfer(let event)):
      showTransfer(event, line, into: &screen, effects: &effects)
    case .event(.error), .error, .notice, .peers, .who, .relayed, .invitations, .transfers:
      add(styler.entries(for: line, now: now), to: current)
    default:
      add(styler.entries(for: line, now: now), to: 0)
    }
  }

  private mutating func receive(_ message: ReceivedMessage, into screen: inout String, effects: inout [Effect]) {
    let id: Conversation.ID = message.isPrivate ? .peer(message.from.id) : .everyone
    let index = conversation(id, peer: message.from, effects: &effects)
    let text = ChatLineStyler.clipped(message.body)  // what is shown is what is logged
    add([styler.message(message, text: text, now: now, inPeerConversation: message.isPrivate)], to: index)
    effects.append(.log(id, LogRecord(time: now, kind: .received, peer: message.from.id, name: message.from.name.value, text: text)))
    guard index != current else { return }
    conversations[index].unread += 1
    if message.isPrivate || ChatLineStyler.mentions(styler.me.name.value, in: text) {
      conversations[index].alert = true
      ring(&screen)
    }
  }

  private mutating func sent(_ id: MessageID, text: String, to peers: [Peer], isPrivate: Bool, effects: inout [Effect]) {
    let text = ChatLineStyler.clipped(text)
    var references: [LineReference] = []
    if isPrivate, peers.count == 1 {
      let target = Conversation.ID.peer(peers[0].id)
      let index = conversation(target, peer: peers[0], effects: &effects)
      let entry = styler.own(id, text: text, recipients: [], mark: .pending, now: now)
      references.append(LineReference(conversation: target, serial: add([entry], to: index)))
      if index != current {
        // Typed in another conversation (/msg): a copy where it was typed.
        let copy = styler.own(id, text: text, recipients: peers, mark: .pending, now: now)
        references.append(LineReference(conversation: shown.id, serial: add([copy], to: current)))
      }
      effects.append(.log(target, LogRecord(time: now, kind: .sent, name: styler.me.name.value, messageID: id, text: text)))
    } else {
      let entry = styler.own(id, text: text, recipients: isPrivate ? peers : [], mark: .pending, now: now)
      references.append(LineReference(conversation: .everyone, serial: add([entry], to: 0)))
      if !isPrivate {
        effects.append(.log(.everyone, LogRecord(time: now, kind: .sent, name: styler.me.name.value, messageID: id, text: text)))
      } else {
        // A private message to several peers: shown once, with everyone, but kept in the
        // history of each recipient's conversation, where it belongs.
        let logs = peers.map { Conversation.ID.peer($0.id) }
        for log in logs { effects.append(.log(log, LogRecord(time: now, kind: .sent, name: styler.me.name.value, messageID: id, text: text))) }
        alsoLogged[id] = logs
      }
    }
    outgoing[id] = references
  }

  /// Rings the terminal bell (unless `--no-bell`).
  mutating func ring(_ screen: inout String) {
    if settings.bell { screen += "\u{7}" }
  }

  /// Adds entries to a conversation, and to the conversation with `peer` if one is open.
  mutating func add(_ entries: [ScreenEntry], to index: Int, alsoFor peer: PeerID) {
    add(entries, to: index)
    if let other = conversations.firstIndex(where: { $0.id == .peer(peer) }), other != index { add(entries, to: other) }
  }

  /// Adds entries to a conversation. In one not shown, what comes before its first unread
  /// message counts as read (the unread marker goes before that message). - Returns: the
  /// serial of the last one.
  @discardableResult
  mutating func add(_ entries: [ScreenEntry], to index: Int) -> Int {
    var serial = conversations[index].endSerial - 1
    for entry in entries {
      serial = conversations[index].append(entry)
      if index != current && conversations[index].unread == 0 && entry.kind != .message { conversations[index].readEnd = serial + 1 }
    }
    return serial
  }

  /// A line of this session in this conversation.
  mutating func add(_ entry: ScreenEntry) { add([entry], to: current) }

  private mutating func setMark(_ mark: DeliveryMark, on lines: [LineReference]) {
    for reference in lines {
      guard let index = conversations.firstIndex(where: { $0.id == reference.conversation }),
        conversations[index].contains(serial: reference.serial)
      else { continue }
      conversations[index][reference.serial].setMark(mark)
    }
  }

  /// Puts the lines of a conversation's history file before its lines of this session.
  mutating func restore(_ id: Conversation.ID, _ records: [LogRecord]) {
    guard let index = conversations.firstIndex(where: { $0.id == id }), conversations[index].awaitingHistory else { return }
    conversations[index].awaitingHistory = false
    var entries: [ScreenEntry] = []
    var sentIndex: [MessageID: Int] = [:]
    for record in records {
      switch record.kind {
      case .received, .sent:
        guard let entry = styler.entry(for: record) else { continue }
        if record.kind == .sent, let messageID = record.messageID { sentIndex[messageID] = entries.count }
        entries.append(entry)
      case .delivered, .failed:
        if let messageID = record.messageID, let position = sentIndex.removeValue(forKey: messageID) {
          entries[position].setMark(record.kind == .delivered ? .delivered : .failed)
        }
      }
    }
    for position in entries.indices { entries[position].messageID = nil }
    conversations[index].prepend(entries)
  }
}
