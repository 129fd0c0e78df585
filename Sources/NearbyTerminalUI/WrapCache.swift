import Synchronization

/// The rows entries were wrapped into, by entry revision and width: wrapping is most of
/// what drawing a frame costs, and a line wraps the same way until it or the width changes.
///
/// Shared by copies of a conversation (a revision is unique to one entry as it is, so a
/// copy never sees rows of a line it does not have). Bounded: past `capacity` entries or
/// `rowCapacity` rows it starts again.
final class WrapCache: Sendable {
  private struct Key: Hashable {
    let revision: UInt64
    let width: Int
  }

  private struct State {
    var rows: [Key: [StyledLine]] = [:]
    /// The rows of all entries cached.
    var rowCount = 0
  }

  private let state = Mutex(State())
  /// The most entries cached.
  let capacity: Int
  /// The most rows cached, over all entries: long messages wrap into hundreds of rows each.
  let rowCapacity: Int

  init(capacity: Int = 4096, rowCapacity: Int = 1 << 16) {
    self.capacity = capacity
    self.rowCapacity = rowCapacity
  }

  /// The rows cached now (tests).
  var rowCount: Int { state.withLock { $0.rowCount } }

  /// The rows of `entry` at `width`, wrapped once.
  func rows(of entry: ScreenEntry, width: Int) -> [StyledLine] {
    let key = Key(revision: entry.revision, width: width)
    if let cached = state.withLock({ $0.rows[key] }) { return cached }
    let wrapped = entry.line.wrapped(width: width, indent: entry.indent)
    state.withLock { state in
      if state.rows.count >= capacity || state.rowCount + wrapped.count > rowCapacity {
        state.rows.removeAll(keepingCapacity: true)
        state.rowCount = 0
      }
      state.rows[key] = wrapped
      state.rowCount += wrapped.count
    }
    return wrapped
  }
}
