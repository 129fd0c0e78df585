import Synchronization

/// The rows entries were wrapped into, by entry revision and width: wrapping is most of
/// what drawing a frame costs, and a line wraps the same way until it or the width changes.
///
/// Shared by copies of a conversation (a revision is unique to one entry as it is, so a
/// copy never sees rows of a line it does not have). Bounded: past `capacity` rows lists it
/// starts again.
final class WrapCache: Sendable {
  private struct Key: Hashable {
    let revision: UInt64
    let width: Int
  }

  private let rows = Mutex<[Key: [StyledLine]]>([:])
  let capacity: Int

  init(capacity: Int = 4096) { self.capacity = capacity }

  /// The rows of `entry` at `width`, wrapped once.
  func rows(of entry: ScreenEntry, width: Int) -> [StyledLine] {
    let key = Key(revision: entry.revision, width: width)
    if let cached = rows.withLock({ $0[key] }) { return cached }
    let wrapped = entry.line.wrapped(width: width, indent: entry.indent)
    rows.withLock { rows in
      if rows.count >= capacity { rows.removeAll(keepingCapacity: true) }
      rows[key] = wrapped
    }
    return wrapped
  }
}
