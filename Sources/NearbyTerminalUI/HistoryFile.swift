#if canImport(Glibc)
  import Glibc
#endif

/// The input history on disk: one line per entry, newest last, in the state directory
/// (`history`, mode 0600: it holds what the person typed).
///
/// Each submitted line is appended; when the file holds more than twice the capacity, it
/// is rewritten with the newest `capacity` lines, so it never grows without bound.
public struct HistoryFile: Sendable {
  public let path: String
  public let capacity: Int

  public init(directory: String, capacity: Int = 1000) {
    path = directory.hasSuffix("/") ? directory + "history" : directory + "/history"
    self.capacity = max(1, capacity)
  }

  /// The newest `capacity` entries (none when the file is missing or unreadable).
  public func load() -> [String] {
    let lines = readLines()
    if lines.count > 2 * capacity { rewrite(Array(lines.suffix(capacity))) }
    return Array(lines.suffix(capacity))
  }

  /// Appends one entry (errors are ignored: history is a convenience).
  public func append(_ line: String) {
    let entry = Self.clean(line)
    guard !entry.isEmpty else { return }
    let fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o600)
    guard fd >= 0 else { return }
    writeAll(fd, Array((entry + "\n").utf8))
    close(fd)
    let lines = readLines()
    if lines.count > 2 * capacity { rewrite(Array(lines.suffix(capacity))) }
  }

  /// Newlines cannot be part of an entry.
  static func clean(_ line: String) -> String {
    String(line.unicodeScalars.filter { $0 != "\n" && $0 != "\r" }.map(Character.init))
  }

  func readLines() -> [String] {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { return [] }
    defer { close(fd) }
    var data: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 16384)
    while data.count < 64 << 20 {
      let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
      if count < 0 && errno == EINTR { continue }
      if count <= 0 { break }
      data.append(contentsOf: buffer[0..<count])
    }
    return data.split(separator: UInt8(ascii: "\n")).map { String(decoding: $0, as: UTF8.self) }
  }

  /// Replaces the file atomically (a temporary file renamed over it).
  func rewrite(_ lines: [String]) {
    let temporary = path + ".tmp"
    let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
    guard fd >= 0 else { return }
    writeAll(fd, Array(lines.map { $0 + "\n" }.joined().utf8))
    close(fd)
    rename(temporary, path)
  }

  private func writeAll(_ fd: Int32, _ bytes: [UInt8]) {
    var offset = 0
    while offset < bytes.count {
      let written = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + offset, $0.count - offset) }
      if written < 0 && errno == EINTR { continue }
      if written <= 0 { return }
      offset += written
    }
  }
}
