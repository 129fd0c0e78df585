import Nearby
import NearbySystem
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

extension PlainOutput {
  /// `/transfers`: one line per transfer (text), or one `transfers` object (JSON).
  static func render(_ transfers: [TransferStatus], json: Bool) -> String {
    if json {
      let list = transfers.map { status -> JSONValue in
        let progress = status.progress
        return .object([
          ("id", .string(progress.id.hex)), ("peer", EventFormatter.peerJSON(progress.peer)), ("direction", .string(progress.direction.rawValue)),
          ("state", .string(status.phase.rawValue)), ("bytes", .unsigned(progress.bytes)), ("total", .unsigned(progress.total)),
          ("files", .number(Int64(progress.fileCount))),
        ])
      }
      return JSONValue.object([("event", .string("transfers")), ("transfers", .array(list))]).encoded
    }
    if transfers.isEmpty { return "* no file transfer is going on" }
    return transfers.map { status in
      let progress = status.progress
      let way = progress.direction == .send ? "to" : "from"
      let state: String =
        switch status.phase {
        case .offered: "waiting for an answer"
        case .asking: "waiting for yours: /receive \(progress.id.shortHex) or /refuse \(progress.id.shortHex)"
        case .active: EventFormatter.progressText(progress)
        case .paused: "paused until \(EventFormatter.sanitize(progress.peer.name.value)) is back, at \(EventFormatter.progressText(progress))"
        }
      let files = progress.fileCount == 1 ? "1 file" : "\(progress.fileCount) files"
      return "* transfer \(progress.id.shortHex) \(way) \(EventFormatter.label(progress.peer)), \(files): \(state)"
    }.joined(separator: "\n")
  }
}

/// Lets a text progress line of a transfer through at most once a second.
final class ProgressThrottle: Sendable {
  private let shown = Mutex<[TransferID: UInt64]>([:])

  func allows(_ line: ChatLine) -> Bool {
    switch line {
    case .event(.transfer(.progress(let progress))):
      var spec = timespec()
      clock_gettime(CLOCK_MONOTONIC, &spec)
      let now = UInt64(spec.tv_sec) * 1000 + UInt64(spec.tv_nsec) / 1_000_000
      return shown.withLock { shown in
        if let last = shown[progress.id], now - last < 1000 { return false }
        shown[progress.id] = now
        return true
      }
    case .event(.transfer(.finished(let id, _, _, _, _))):
      _ = shown.withLock { $0.removeValue(forKey: id) }
      return true
    default:
      return true
    }
  }
}
