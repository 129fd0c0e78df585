import NearbyCore

#if canImport(Glibc)
  import Glibc
#endif

/// Transfers that outlive a connection or a restart, kept in the state directory's
/// `transfers` folder (mode 0700; each record mode 0600, replaced atomically, opened with
/// `O_NOFOLLOW` through ``StateDirectory``): one text file per transfer, `ID.send` or
/// `ID.receive`.
///
/// A record says who the peer is, what was offered and, for a receiver, where each file goes
/// and which are saved. How far each file got is not recorded: it is the size of its `.part`
/// (hashed again at a resume), so a record is written only when something changes that a
/// resume needs (the offer, the answer, a file saved), never per chunk. A receiver keeps the
/// record of a finished transfer for a week (``Status/closed``), so that a sender that
/// missed the end and offers again is answered rather than asked about again.
struct TransferStore: Sendable {
  let directory: StateDirectory

  /// What a record says about a transfer's life.
  enum Status: String, Sendable {
    /// Offered, going on, or to resume.
    case active
    /// The transfer ended; a new OFFER of it is answered with `closedWith` (receiver), or a
    /// CANCEL is still owed to the receiver (sender, `cancel-owed`).
    case closed
    case cancelOwed = "cancel-owed"
  }

  struct Record: Sendable {
    var id: TransferID
    var direction: TransferDirection
    var peer: PeerID
    var status: Status = .active
    /// Receiver: how a closed transfer ended (CANCEL reason, 0 = completed).
    var closedWith: UInt8 = 0
    /// Seconds since the epoch of the last change.
    var updated: UInt64 = 0
    var files: [OfferedFile]
    /// Sender: each file on our disk, and the paths it was given (to find it again).
    var sources: [FileSource.Item] = []
    var arguments: [String] = []
    /// Receiver: the download folder, each wanted file's path below it, and those saved.
    var downloads: String?
    var paths: [Int: [String]] = [:]
    var saved: [Int: [String]] = [:]
  }

  /// Opens (creating) `transfers` in the state directory `path`.
  init(stateDirectory path: String) throws(IdentityError) {
    directory = try StateDirectory(path.hasSuffix("/") ? path + "transfers" : path + "/transfers")
  }

  static func fileName(_ id: TransferID, _ direction: TransferDirection) -> String {
    "\(id.hex).\(direction == .send ? "send" : "receive")"
  }

  func save(_ record: Record) throws(IdentityError) {
    var record = record
    record.updated = UInt64(time(nil))
    try directory.write(Self.fileName(record.id, record.direction), Array(Self.encode(record).utf8))
  }

  func remove(_ id: TransferID, _ direction: TransferDirection) {
    directory.remove(Self.fileName(id, direction))
  }

  /// Every record; unreadable ones are reported, closed ones older than a week removed.
  func loadAll() -> (records: [Record], problems: [String]) {
    var records: [Record] = []
    var problems: [String] = []
    let now = UInt64(time(nil))
    for name in names() where name.hasSuffix(".send") || name.hasSuffix(".receive") {
      do {
        guard let bytes = try directory.read(name, limit: 4 << 20) else { continue }
        guard var record = Self.decode(String(decoding: bytes, as: UTF8.self)),
          let id = TransferID(hex: name.prefix { $0 != "." }), Self.fileName(id, record.direction) == name
        else {
          problems.append("\(directory.full(name)) is not a transfer record; it was left alone")
          continue
        }
        record.id = id
        if record.status == .closed, now > record.updated + 7 * 86_400 {
          directory.remove(name)
          continue
        }
        records.append(record)
      } catch {
        problems.append("\(error)")
      }
    }
    return (records, problems)
  }

  /// The names in the folder.
  private func names() -> [String] {
    guard let stream = opendir(directory.path) else { return [] }
    defer { closedir(stream) }
    var names: [String] = []
    while let entry = readdir(stream) {
      let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
      if !name.hasPrefix(".") { names.append(name) }
    }
    return names.sorted()
  }

  // MARK: The text

  static let versionLine = "nearby-transfer 1"

  static func encode(_ record: Record) -> String {
    var text = "# Nearby file transfer: what a resume needs. Written by nearby; do not edit.\n"
    text += versionLine + "\n"
    text += "direction \(record.direction.rawValue)\n"
    text += "peer \(record.peer.hex)\n"
    text += "status \(record.status.rawValue) \(record.closedWith)\n"
    text += "updated \(record.updated)\n"
    if let downloads = record.downloads { text += "downloads \(escape(downloads))\n" }
    for argument in record.arguments { text += "argument \(escape(argument))\n" }
    for (index, file) in record.files.enumerated() {
      var line = "file \(file.size) \(file.flags) \(escape(file.name))"
      if record.direction == .send, index < record.sources.count {
        let item = record.sources[index]
        line += " \(item.modified.seconds) \(item.modified.nanoseconds) \(item.nested ? 1 : 0) \(escape(item.path))"
      } else if record.direction == .receive {
        line += " " + (record.paths[index].map { escape($0.joined(separator: "/")) } ?? "-")
        line += " " + (record.saved[index].map { escape($0.joined(separator: "/")) } ?? "-")
      }
      text += line + "\n"
    }
    return text
  }

  static func decode(_ text: String) -> Record? {
    var lines = text.split(separator: "\n").filter { !$0.hasPrefix("#") && !$0.isEmpty }.makeIterator()
    guard lines.next() == Substring(versionLine) else { return nil }
    var direction: TransferDirection?
    var peer: PeerID?
    var status = Status.active
    var closedWith: UInt8 = 0
    var updated: UInt64 = 0
    var downloads: String?
    var arguments: [String] = []
    var files: [OfferedFile] = []
    var sources: [FileSource.Item] = []
    var paths: [Int: [String]] = [:]
    var saved: [Int: [String]] = [:]
    while let line = lines.next() {
      let fields = line.split(separator: " ")
      guard let key = fields.first else { return nil }
      switch key {
      case "direction": direction = fields.count == 2 ? TransferDirection(rawValue: String(fields[1])) : nil
      case "peer": peer = fields.count == 2 ? PeerID(hex: fields[1]) : nil
      case "status":
        guard fields.count == 3, let value = Status(rawValue: String(fields[1])), let code = UInt8(fields[2]) else { return nil }
        status = value
        closedWith = code
      case "updated": updated = fields.count == 2 ? UInt64(fields[1]) ?? 0 : 0
      case "downloads": downloads = fields.count == 2 ? unescape(fields[1]) : nil
      case "argument":
        guard fields.count == 2, let argument = unescape(fields[1]) else { return nil }
        arguments.append(argument)
      case "file":
        guard fields.count >= 4, let size = UInt64(fields[1]), let flags = UInt8(fields[2]), let name = unescape(fields[3]) else { return nil }
        let index = files.count
        files.append(OfferedFile(name: name, size: size, flags: flags))
        if direction == .send {
          guard fields.count == 8, let seconds = Int(fields[4]), let nanoseconds = Int(fields[5]), let path = unescape(fields[7]) else { return nil }
          sources.append(
            FileSource.Item(path: path, size: size, modified: (seconds, nanoseconds), isDirectory: flags & 2 != 0, nested: fields[6] == "1"))
        } else {
          guard fields.count == 6 else { return nil }
          if fields[4] != "-" { paths[index] = unescape(fields[4])?.split(separator: "/").map(String.init) }
          if fields[5] != "-" { saved[index] = unescape(fields[5])?.split(separator: "/").map(String.init) }
        }
      default: return nil
      }
    }
    guard let direction, let peer, !files.isEmpty else { return nil }
    return Record(
      id: TransferID(PeerID(high: 0, low: 1)), direction: direction, peer: peer, status: status, closedWith: closedWith, updated: updated,
      files: files, sources: sources, arguments: arguments, downloads: downloads, paths: paths, saved: saved)
  }

  /// Bytes outside printable ASCII, `%` and space as `%XX` (names may hold anything).
  static func escape(_ text: String) -> String {
    if text.isEmpty { return "%" }
    var out = ""
    for byte in text.utf8 {
      if byte > 0x20 && byte < 0x7F && byte != UInt8(ascii: "%") {
        out.unicodeScalars.append(Unicode.Scalar(byte))
      } else {
        out += "%" + (byte < 16 ? "0" : "") + String(byte, radix: 16, uppercase: true)
      }
    }
    return out
  }

  static func unescape(_ text: Substring) -> String? {
    if text == "%" { return "" }
    var bytes: [UInt8] = []
    var iterator = text.utf8.makeIterator()
    while let byte = iterator.next() {
      if byte == UInt8(ascii: "%") {
        guard let high = iterator.next(), let low = iterator.next(),
          let value = UInt8(String(decoding: [high, low], as: UTF8.self), radix: 16)
        else { return nil }
        bytes.append(value)
      } else {
        bytes.append(byte)
      }
    }
    return String(validating: bytes, as: UTF8.self)
  }
}
