import Nearby
import NearbyChat

/// File transfers in the terminal chat: offers and ends as lines of the log, and a progress
/// bar per transfer going on, above the status bar:
/// `↓ alice  [██████████░░░░░░░░░░]  45%  5.6/12.4 MiB  12.3 MiB/s  ETA 1 s  photos/a.jpg`.
extension TerminalChatModel {
  /// The most bars shown; beyond, the last row counts the others.
  static let maximumTransferRows = 3

  /// A transfer belongs to the conversation with its peer (opened if needed, as a private
  /// message opens it): its offer, start and end show there and in the one with everyone.
  /// An offer counts as unread there, with `!`, and rings the bell unless that
  /// conversation is shown. Pending offers and transfers going on are what Tab completes
  /// after `/receive`, `/refuse` and `/cancel`.
  mutating func showTransfer(_ event: TransferEvent, _ line: ChatLine, into screen: inout String, effects: inout [Effect]) {
    switch event {
    case .offer(let offer):
      pendingOffers[offer.id] = offer.from
      let index = addToPeerConversation(styler.entries(for: line, now: now), peer: offer.from, effects: &effects)
      if index != current {
        conversations[index].unread += 1
        conversations[index].alert = true
        ring(&screen)
      }
    case .started(let progress):
      pendingOffers[progress.id] = nil
      transferBars[progress.id] = progress
      addToPeerConversation(styler.entries(for: line, now: now), peer: progress.peer, effects: &effects)
    case .progress(let progress):
      // No line: the bar changes in place.
      if transferBars[progress.id] != nil || progress.bytes < progress.total { transferBars[progress.id] = progress }
    case .finished(let id, let peer, _, _, _):
      pendingOffers[id] = nil
      transferBars[id] = nil
      addToPeerConversation(styler.entries(for: line, now: now), peer: peer, effects: &effects)
    }
  }

  /// Adds entries to the conversation with everyone and to the one with `peer`, opening it.
  /// - Returns: the index of the peer's conversation.
  @discardableResult
  private mutating func addToPeerConversation(_ entries: [ScreenEntry], peer: Peer, effects: inout [Effect]) -> Int {
    let index = conversation(.peer(peer.id), peer: peer, effects: &effects)
    add(entries, to: 0, alsoFor: peer.id)
    return index
  }

  /// Short ids for Tab after `/receive` and `/refuse` (pending offers) or `/cancel` (those
  /// and transfers going on); nil after any other command (it takes names).
  func transferCompletions(after command: String) -> [String]? {
    var ids = Set(pendingOffers.keys)
    switch command.lowercased() {
    case "/receive", "/refuse": break
    case "/cancel": ids.formUnion(transferBars.keys)
    default: return nil
    }
    return ids.map(\.shortHex).sorted()
  }

  /// Rows the bars take (none on a terminal too short to spare them).
  var transferRowCount: Int {
    guard size.rows >= 8, !transferBars.isEmpty else { return 0 }
    return min(transferBars.count, Self.maximumTransferRows)
  }

  /// The progress bars in `count` rows (at most ``transferRowCount``), oldest transfer first.
  func transferRows(_ count: Int) -> [StyledLine] {
    guard count > 0 else { return [] }
    let ordered = transferBars.values.sorted { $0.id < $1.id }
    var rows = ordered.prefix(transferBars.count > count ? count - 1 : count).map(transferRow)
    if transferBars.count > count {
      rows.append(StyledLine("  … and \(transferBars.count - count + 1) more transfers (/transfers)", .dim).truncated(to: size.columns))
    }
    return rows
  }

  func transferRow(_ progress: TransferProgress) -> StyledLine {
    var line = StyledLine(progress.direction == .send ? "↑ " : "↓ ", .bold)
    line.append(EventFormatter.sanitize(progress.peer.name.value), styler.nameStyle(of: progress.peer.id))
    let fraction = progress.total == 0 ? 1 : Double(progress.bytes) / Double(progress.total)
    var figures = "  \(Int(fraction * 100))%  \(EventFormatter.byteText(progress.bytes))/\(EventFormatter.byteText(progress.total))"
    if progress.rate > 0 { figures += "  \(EventFormatter.byteText(progress.rate))/s" }
    if progress.rate > 0, let left = progress.secondsLeft { figures += "  ETA \(EventFormatter.durationText(left))" }
    let file = progress.currentFile.map { "  " + EventFormatter.sanitize($0) } ?? ""
    let room = size.columns - line.width - figures.count - 4
    let width = max(0, min(30, room))
    if width >= 5 {
      let filled = min(width, Int((fraction * Double(width)).rounded(.down)))
      line.append("  [", .dim)
      line.append(String(repeating: "█", count: filled))
      line.append(String(repeating: "░", count: width - filled), .dim)
      line.append("]", .dim)
    }
    line.append(figures)
    line.append(file, .dim)
    return line.truncated(to: size.columns)
  }
}
