/// The input history on disk: one line per entry, newest last, in the state directory
/// (`history`, mode 0600: it holds what the person typed), opened safely (see
/// ``PrivateDirectory``) and bounded (see ``LineFile``).
public struct HistoryFile: Sendable {
  public let path: String
  public let capacity: Int
  private let file: LineFile?

  /// - Parameter directory: the state directory (when it cannot be used, nothing is kept).
  public init(directory: String, capacity: Int = 1000) {
    path = directory.hasSuffix("/") ? directory + "history" : directory + "/history"
    self.capacity = max(1, capacity)
    file = (try? PrivateDirectory(directory)).map { LineFile(directory: $0, name: "history", capacity: capacity, maximumBytes: 1 << 20) }
  }

  /// The newest `capacity` entries (none when the file is missing or unreadable).
  public func load() -> [String] { (try? file?.load()) ?? [] }

  /// Appends one entry (errors are ignored: history is a convenience).
  public func append(_ line: String) {
    let entry = Self.clean(line)
    guard !entry.isEmpty else { return }
    try? file?.append(entry)
  }

  /// Newlines cannot be part of an entry.
  static func clean(_ line: String) -> String {
    String(line.unicodeScalars.filter { $0 != "\n" && $0 != "\r" }.map(Character.init))
  }
}
