import Synchronization

/// A bounded file of lines in a ``PrivateDirectory``: lines are appended one at a time, and
/// when the file holds more than twice `capacity` lines or more than `maximumBytes`, it is
/// replaced (atomically) by its newest `capacity` lines, so it never grows without bound.
/// Errors are given to `onError` once and otherwise ignored: history is a convenience.
public final class LineFile: Sendable {
  public let directory: PrivateDirectory
  public let name: String
  public let capacity: Int
  public let maximumBytes: Int
  /// The lines in the file, once it was read (to know when to compact it).
  private let lineCount = Mutex<Int?>(nil)

  public init(directory: PrivateDirectory, name: String, capacity: Int, maximumBytes: Int = 4 << 20) {
    self.directory = directory
    self.name = name
    self.capacity = max(1, capacity)
    self.maximumBytes = max(1024, maximumBytes)
  }

  /// The newest `capacity` lines, oldest first.
  public func load() throws(PrivateDirectory.Failure) -> [String] {
    let lines = try readLines()
    lineCount.withLock { $0 = lines.count }
    if lines.count > 2 * capacity { try compact(lines) }
    return Array(lines.suffix(capacity))
  }

  /// Appends one line (it must not contain a newline).
  public func append(_ line: String) throws(PrivateDirectory.Failure) {
    if lineCount.withLock({ $0 }) == nil { _ = try load() }
    let size = try directory.append(name, Array((line + "\n").utf8))
    let count = lineCount.withLock { count in
      count = (count ?? 0) + 1
      return count ?? 0
    }
    if count > 2 * capacity || size > maximumBytes { try compact(try readLines()) }
  }

  private func readLines() throws(PrivateDirectory.Failure) -> [String] {
    guard let bytes = try directory.readTail(name, limit: 2 * maximumBytes) else { return [] }
    return bytes.split(separator: UInt8(ascii: "\n")).map { String(decoding: $0, as: UTF8.self) }
  }

  /// Keeps the newest `capacity` lines, and no more than half of `maximumBytes`.
  private func compact(_ lines: [String]) throws(PrivateDirectory.Failure) {
    var kept: [String] = []
    var bytes = 0
    for line in lines.reversed() {
      if kept.count >= capacity || bytes + line.utf8.count + 1 > maximumBytes / 2 { break }
      kept.append(line)
      bytes += line.utf8.count + 1
    }
    kept.reverse()
    try directory.replace(name, Array(kept.map { $0 + "\n" }.joined().utf8))
    lineCount.withLock { $0 = kept.count }
  }
}
