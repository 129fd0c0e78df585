import Synchronization

/// The history of every conversation, kept in `logs/` in the state directory: `all.log` for
/// the one with everyone, `PEERID.log` (32 hex digits) for the one with a peer; one
/// ``LogRecord`` a line, each file bounded (see ``LineFile``), mode 0600.
public final class ConversationLogs: Sendable {
  public let directory: PrivateDirectory
  /// The records kept per conversation (the file holds up to twice as many between
  /// compactions); this many are shown when the conversation opens again.
  public let capacity: Int
  private let files = Mutex<[String: LineFile]>([:])

  /// Opens (creating) `logs/` in the state directory.
  /// - Throws: ``PrivateDirectory/Failure`` when it cannot be used safely.
  public init(stateDirectory: String, capacity: Int = 1000) throws(PrivateDirectory.Failure) {
    directory = try PrivateDirectory(stateDirectory).subdirectory("logs")
    self.capacity = max(1, capacity)
  }

  /// The file name of a conversation's log.
  public static func fileName(_ id: Conversation.ID) -> String {
    switch id {
    case .everyone: "all.log"
    case .peer(let peer): "\(peer.hex).log"
    }
  }

  /// The newest records of a conversation, oldest first (none when it has no log yet).
  public func records(_ id: Conversation.ID) throws(PrivateDirectory.Failure) -> [LogRecord] {
    try file(id).load().compactMap { LogRecord(encoded: $0) }
  }

  /// Adds a record to a conversation's log.
  public func append(_ record: LogRecord, to id: Conversation.ID) throws(PrivateDirectory.Failure) {
    try file(id).append(record.encoded)
  }

  private func file(_ id: Conversation.ID) -> LineFile {
    let name = Self.fileName(id)
    return files.withLock { files in
      if let file = files[name] { return file }
      // Marks of delivery take records too: room for about one per message.
      let file = LineFile(directory: directory, name: name, capacity: 2 * capacity)
      files[name] = file
      return file
    }
  }
}
