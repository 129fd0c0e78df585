import Nearby
import NearbySystem

/// File-transfer events as lines: text for people, JSON (`offer`, `transfer`,
/// `transfer-done`, `transfer-failed`, `transfer-cancelled`) for scripts.
extension EventFormatter {
  /// `transfer 3fa9 was cancelled by bob (9c1e): disk full`: the peer's message made safe
  /// to print (it is theirs: up to 1 KiB of any text, escape sequences included).
  public static func cancelledText(_ id: TransferID, by peer: Peer?, message: String) -> String {
    "transfer \(id.shortHex) was cancelled\(peer.map { " by \(label($0))" } ?? "")\(message.isEmpty ? "" : ": \(sanitize(message))")"
  }

  /// `3 files (12.4 MiB): photos/a.jpg, photos/b.jpg, notes.txt`
  public static func offerSummary(_ files: [OfferedFile]) -> String {
    let regular = files.filter { !$0.isDirectory }
    let total = files.reduce(UInt64(0)) { $0 + $1.size }
    let count = regular.count == 1 ? "1 file" : "\(regular.count) files"
    let folders = files.count - regular.count
    var text = "\(count)\(folders > 0 ? " and \(folders) empty folder\(folders == 1 ? "" : "s")" : "") (\(byteText(total)))"
    let names = files.prefix(3).map { sanitize($0.name) }
    text += ": " + names.joined(separator: ", ") + (files.count > 3 ? ", and \(files.count - 3) more" : "")
    return text
  }

  /// `12.4 MiB`
  public static func byteText(_ count: UInt64) -> String {
    let units = ["B", "KiB", "MiB", "GiB", "TiB"]
    var value = Double(count)
    var unit = 0
    while value >= 1024, unit < units.count - 1 {
      value /= 1024
      unit += 1
    }
    if unit == 0 { return "\(count) B" }
    let tenths = Int((value * 10).rounded())
    return "\(tenths / 10).\(tenths % 10) \(units[unit])"
  }

  /// `45% 5.6/12.4 MiB, 12.3 MiB/s, 1 s left`
  public static func progressText(_ progress: TransferProgress) -> String {
    let percent = progress.total == 0 ? 100 : Int(progress.bytes * 100 / progress.total)
    var text = "\(percent)% \(byteText(progress.bytes))/\(byteText(progress.total))"
    if progress.rate > 0 { text += ", \(byteText(progress.rate))/s" }
    if let left = progress.secondsLeft, progress.rate > 0 { text += ", \(durationText(left)) left" }
    return text
  }

  /// `42 s`, `3 min 5 s`, `2 h 10 min`
  public static func durationText(_ seconds: UInt64) -> String {
    if seconds < 60 { return "\(seconds) s" }
    if seconds < 3600 { return "\(seconds / 60) min \(seconds % 60) s" }
    return "\(seconds / 3600) h \((seconds % 3600) / 60) min"
  }

  func formatText(_ event: TransferEvent) -> String? {
    switch event {
    case .offer(let offer):
      let short = offer.id.shortHex
      return "* \(Self.label(offer.from)) offers \(Self.offerSummary(offer.files)) — /receive \(short) or /refuse \(short)"
    case .started(let progress):
      let files = progress.fileCount == 1 ? "1 file" : "\(progress.fileCount) files"
      return progress.direction == .send
        ? "* \(Self.label(progress.peer)) accepted transfer \(progress.id.shortHex): sending \(files) (\(Self.byteText(progress.total)))"
        : "* receiving \(files) (\(Self.byteText(progress.total))) from \(Self.label(progress.peer)): transfer \(progress.id.shortHex)"
    case .progress(let progress):
      let way = progress.direction == .send ? "to" : "from"
      return "* transfer \(progress.id.shortHex) \(way) \(Self.label(progress.peer)): \(Self.progressText(progress))"
    case .finished(let id, let peer, let direction, let end, let files):
      switch end {
      case .completed:
        let total = Self.byteText(files.reduce(UInt64(0)) { $0 + $1.size })
        let count = files.count == 1 ? "1 file" : "\(files.count) files"
        if direction == .send {
          return "* \(Self.label(peer)) has transfer \(id.shortHex): \(count) (\(total)), every one verified"
        }
        return "* received \(count) (\(total)) from \(Self.label(peer)), verified: "
          + files.map { Self.sanitize($0.path) }.joined(separator: ", ")
      case .cancelled(let byPeer, let message):
        let who = byPeer ? "by \(Self.sanitize(peer.name.value))" : "by you"
        return "* transfer \(id.shortHex) with \(Self.label(peer)) was cancelled \(who)"
          + (message.isEmpty || !byPeer ? "" : ": \(Self.sanitize(message))")
      case .failed(let reason, let message):
        if reason == .refused, direction == .send {
          return "! \(Self.label(peer)) refused transfer \(id.shortHex)\(message.isEmpty ? "" : ": \(Self.sanitize(message))")"
        }
        return "! transfer \(id.shortHex) with \(Self.label(peer)) failed: \(Self.sanitize(message))"
      }
    }
  }

  func formatJSON(_ event: TransferEvent) -> JSONValue {
    func object(_ name: String, _ members: [(String, JSONValue)]) -> JSONValue { .object([("event", .string(name))] + members) }
    switch event {
    case .offer(let offer):
      return object(
        "offer",
        [
          ("id", .string(offer.id.hex)), ("from", Self.peerJSON(offer.from)),
          ("files", .array(offer.files.map { .object([("name", .string($0.name)), ("size", .unsigned($0.size))]) })),
          ("total", .unsigned(offer.totalSize)),
        ])
    case .started(let progress), .progress(let progress):
      return object(
        "transfer",
        [
          ("id", .string(progress.id.hex)), ("peer", Self.peerJSON(progress.peer)), ("direction", .string(progress.direction.rawValue)),
          ("bytes", .unsigned(progress.bytes)), ("total", .unsigned(progress.total)), ("rate", .unsigned(progress.rate)),
        ] + (progress.direction == .send ? [("sent", .unsigned(progress.sent))] : []))
    case .finished(let id, let peer, let direction, let end, let files):
      let common: [(String, JSONValue)] = [
        ("id", .string(id.hex)), ("peer", Self.peerJSON(peer)), ("direction", .string(direction.rawValue)),
      ]
      switch end {
      case .completed:
        let list = files.map { file -> JSONValue in
          .object([
            ("name", .string(file.name)), ("path", .string(file.path)), ("size", .unsigned(file.size)), ("blake2b", .string(file.blake2b)),
          ])
        }
        return object("transfer-done", common + [("files", .array(list))])
      case .cancelled(let byPeer, let message):
        return object("transfer-cancelled", common + [("by", .string(byPeer ? "peer" : "us")), ("reason", .string(message))])
      case .failed(let reason, let message):
        return object("transfer-failed", common + [("code", .string(reason.description)), ("reason", .string(message))])
      }
    }
  }
}
