/// Per-source limits on connections that have not reached `connected` (handshaking, or
/// authenticated and not yet invited), so that one host cannot hold every slot of the
/// session's global limit (PROTOCOL.md section 8): a flood of connections from one address
/// is refused at once while peers from other addresses still get in.
///
/// A source is a remote address (an IPv6 address counts by its /64 prefix: one host may
/// hold many). The shell asks ``admit(_:from:stillPending:)`` as a connection is accepted,
/// before anything is made for it; connections stop counting once `stillPending` says so
/// (they reached `connected`, or closed), which is checked when a source reaches its limit
/// and when the table grows, so the table stays as small as the connections it counts.
package struct SourceAdmission: Sendable {
  /// The most pending connections from one source.
  package var maximumPerSource: Int
  private var pendingBySource: [String: [ConnectionID]] = [:]
  private var sourceOf: [ConnectionID: String] = [:]
  /// When the table holds this many entries, every entry is checked again.
  private var sweepAt = 64

  package init(maximumPerSource: Int) {
    self.maximumPerSource = max(1, maximumPerSource)
  }

  /// Connections counted now (pending, or not yet known to have stopped).
  package var trackedCount: Int { sourceOf.count }

  /// How many connections of `source` are counted.
  package func pendingCount(from source: String) -> Int { pendingBySource[source]?.count ?? 0 }

  /// Takes connection `id` from `source` unless that source is at its limit.
  /// - Parameter stillPending: whether a connection counted earlier still counts.
  /// - Returns: `nil` when admitted (it counts from now on), or why not.
  package mutating func admit(_ id: ConnectionID, from source: String, stillPending: (ConnectionID) -> Bool) -> String? {
    if pendingCount(from: source) >= maximumPerSource { forgetSettled(of: source, stillPending) }
    let count = pendingCount(from: source)
    if count >= maximumPerSource {
      return
        "\(count) connections from \(source) are still being set up, the most one host may have; try again later"
    }
    if sourceOf.count >= sweepAt {
      for source in Array(pendingBySource.keys) { forgetSettled(of: source, stillPending) }
      sweepAt = max(64, 2 * sourceOf.count)
    }
    pendingBySource[source, default: []].append(id)
    sourceOf[id] = source
    return nil
  }

  /// Connection `id` no longer counts (it is connected or closed).
  package mutating func settle(_ id: ConnectionID) {
    guard let source = sourceOf.removeValue(forKey: id) else { return }
    pendingBySource[source]?.removeAll { $0 == id }
    if pendingBySource[source]?.isEmpty == true { pendingBySource[source] = nil }
  }

  private mutating func forgetSettled(of source: String, _ stillPending: (ConnectionID) -> Bool) {
    guard let ids = pendingBySource[source] else { return }
    for id in ids where !stillPending(id) { settle(id) }
  }
}
