import NearbyCore
import NearbyCrypto
import NearbySystem

#if canImport(Glibc)
  import Glibc
#endif

/// The files of an incoming transfer on our disk, written on the transfer's queue (never on
/// Swift's thread pool).
///
/// Everything is created inside the download folder, relative to its descriptor, with
/// `O_NOFOLLOW` and `O_EXCL`: folders with `mkdirat`, each file as `NAME.part` (mode 0600)
/// until its BLAKE2b checks out, then linked to its final name, which must not exist
/// (otherwise ` (2)`, ` (3)`, ...: nothing is ever overwritten), and the `.part` removed.
/// Only regular files and folders are made: no device, fifo or symlink.
///
/// Not thread-safe: only its transfer's queue touches it.
final class FileSink: @unchecked Sendable {
  /// A file (or empty folder) of the offer, where it goes.
  struct Entry: Hashable, Sendable {
    /// The path below the download folder, components already sanitized; the first one may
    /// be renumbered when the folder has something of that name.
    var path: [String]
    var size: UInt64
    var isExecutable: Bool
    var isDirectory: Bool
  }

  let directory: String
  private let root: Int32
  /// Fixed once made (the I/O thread reads it after ``create(in:entries:)``).
  let entries: [Int: Entry]
  /// Open `.part` files and their hashes, by file index, with the write-behind's progress:
  /// the range last handed to the disk starts at `behindStart` and ends at `behindEnd`.
  private var open: [Int: (fd: Int32, parent: Int32, hasher: FileHasher, behindStart: UInt64, behindEnd: UInt64)] = [:]
  /// Written bytes handed to the disk at a time while a file arrives (see ``write(_:at:_:)``).
  static let writeBehind: UInt64 = 8 << 20
  /// Where each verified file was saved (relative to the download folder).
  private(set) var saved: [Int: [String]] = [:]

  private init(directory: String, root: Int32, entries: [Int: Entry]) {
    self.directory = directory
    self.root = root
    self.entries = entries
  }

  deinit {
    for (_, file) in open {
      close(file.fd)
      close(file.parent)
    }
    close(root)
  }

  /// The error for the first entry whose path is not safe below the download folder (see
  /// `TransferName.isSafe(path:)`), if any. Paths come sanitized from the offer, or from a
  /// record on our disk: this checks again before anything touches the disk (a component
  /// `..` made by an older version, or an empty path read back from a record, which trapped).
  private static func unsafeEntry(_ entries: [Int: Entry]) -> FileError? {
    guard let index = entries.keys.sorted().first(where: { !TransferName.isSafe(path: entries[$0]!.path) }) else { return nil }
    let shown = entries[index]!.path.map { String($0.unicodeScalars.map { $0.value < 0x20 ? "_" : Character($0) }) }.joined(separator: "/")
    return FileError(
      "file \(index) of the transfer would be saved under '\(shown.prefix(120))', which is not a safe path below the download folder; nothing was written"
    )
  }

  /// Opens (creating it, mode 0755, and its parents) the download folder.
  static func openFolder(_ path: String) -> Result<Int32, FileError> {
    var current = path.hasPrefix("/") ? "" : "."
    for component in path.split(separator: "/") {
      current += "/" + component
      if mkdir(current, 0o755) != 0 && errno != EEXIST {
        return .failure(.system("cannot create the download folder \(current)", errno))
      }
    }
    let fd = FileCalls.retrying32 { Glibc.open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC) }
    guard fd >= 0 else { return .failure(.system("cannot open the download folder \(path)", errno)) }
    return .success(fd)
  }

  /// Sets up a new transfer: checks the free space, picks names that do not exist yet, makes
  /// the folders and creates every wanted file's `.part`.
  /// - Returns: the sink and the entries as placed (the first component may have changed).
  static func create(in path: String, entries wanted: [Int: Entry], checkFreeSpace: Bool = true) -> Result<FileSink, FileError> {
    if let unsafe = unsafeEntry(wanted) { return .failure(unsafe) }
    // The space first, where the folder is or will be: a refusal leaves nothing behind.
    let needed = wanted.values.reduce(UInt64(0)) { $0 + $1.size }
    if checkFreeSpace, let free = FileCalls.freeBytes(at: path), free < needed + (1 << 20) {
      return .failure(
        FileError(
          "not enough free space in \(path): the offer needs \(needed.byteCount), \(free.byteCount) are free; free some space or choose another download folder",
          code: ENOSPC))
    }
    let root: Int32
    switch openFolder(path) {
    case .success(let fd): root = fd
    case .failure(let error): return .failure(error)
    }
    var placed = wanted
    // Every top-level name gets a number when something of that name (or its .part) exists.
    var tops: [String: String] = [:]
    for index in wanted.keys.sorted() {
      let top = wanted[index]!.path[0]
      if tops[top.lowercased()] == nil {
        var number = 1
        var name = top
        while FileCalls.exists(name, in: root) || FileCalls.exists(name + ".part", in: root)
          || tops.values.contains(where: { $0.lowercased() == name.lowercased() })
        {
          number += 1
          name = TransferName.numbered(top, number)
        }
        tops[top.lowercased()] = name
      }
      placed[index]!.path[0] = tops[top.lowercased()]!
    }
    let sink = FileSink(directory: path, root: root, entries: placed)
    for index in placed.keys.sorted() {
      if case .failure(let error) = sink.start(index, fresh: true) {
        sink.discard()
        return .failure(error)
      }
    }
    return .success(sink)
  }

  /// Opens a transfer that was under way before a restart: each unfinished file's `.part` is
  /// opened and hashed again up to its end (its size is where the transfer resumes); a missing
  /// one starts over.
  /// - Returns: the sink and, per wanted file, the bytes it has (`nil`: saved already).
  static func resume(in path: String, entries: [Int: Entry], saved: [Int: [String]]) -> Result<(FileSink, [Int: UInt64?]), FileError> {
    if let unsafe = unsafeEntry(entries) { return .failure(unsafe) }
    let root: Int32
    switch openFolder(path) {
    case .success(let fd): root = fd
    case .failure(let error): return .failure(error)
    }
    let sink = FileSink(directory: path, root: root, entries: entries)
    sink.saved = saved
    var have: [Int: UInt64?] = [:]
    for index in entries.keys.sorted() {
      if saved[index] != nil || entries[index]!.isDirectory {
        if entries[index]!.isDirectory { _ = sink.start(index, fresh: false) }
        have[index] = .some(nil)
        continue
      }
      switch sink.start(index, fresh: false) {
      case .failure(let error):
        sink.discard()
        return .failure(error)
      case .success(let offset): have[index] = offset
      }
    }
    return .success((sink, have))
  }

  /// Makes the folders of entry `index` and opens its `.part` (hashing what it holds).
  /// - Returns: the bytes already in the `.part`.
  private func start(_ index: Int, fresh: Bool) -> Result<UInt64, FileError> {
    let entry = entries[index]!
    let folders = entry.isDirectory ? entry.path : Array(entry.path.dropLast())
    var parent = dup(root)
    for (depth, folder) in folders.enumerated() {
      if mkdirat(parent, folder, 0o755) != 0 && errno != EEXIST {
        let code = errno
        close(parent)
        return .failure(.system("cannot create the folder \(display(entry.path.prefix(depth + 1)))", code))
      }
      let next = FileCalls.openDirectory(folder, in: parent)
      let code = errno
      close(parent)
      guard next >= 0 else { return .failure(.system("cannot open the folder \(display(entry.path.prefix(depth + 1)))", code)) }
      parent = next
    }
    if entry.isDirectory {
      close(parent)
      return .success(0)
    }
    let part = entry.path.last! + ".part"
    var flags = O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK
    if fresh { flags |= O_EXCL }
    let fd = FileCalls.retrying32 { openat(parent, part, flags, 0o600) }
    guard fd >= 0 else {
      let code = errno
      close(parent)
      return .failure(.system("cannot create \(display(entry.path.dropLast() + [part]))", code))
    }
    guard let info = FileCalls.status(fd), FileCalls.isRegular(info), info.st_nlink == 1 else {
      close(fd)
      close(parent)
      return .failure(FileError("\(display(entry.path.dropLast() + [part])) is not a regular file of ours: remove it and send again"))
    }
    let hasher = FileHasher()
    var have = UInt64(info.st_size)
    if have > entry.size {
      _ = ftruncate(fd, off_t(entry.size))
      have = entry.size
    }
    if have > 0 {
      // A resume: what the .part holds is hashed again, in order.
      var buffer = [UInt8](repeating: 0, count: 1 << 20)
      var offset: UInt64 = 0
      while offset < have {
        let step = Int(min(have - offset, UInt64(buffer.count)))
        let result = buffer.withUnsafeMutableBytes { FileCalls.read(fd, at: offset, count: step, into: $0) }
        guard case .success(let got) = result, got == step else {
          close(fd)
          close(parent)
          return .failure(FileError("cannot read back \(display(entry.path.dropLast() + [part])) to resume"))
        }
        buffer.withUnsafeBytes { hasher.update(UnsafeRawBufferPointer(rebasing: $0[0..<step])) }
        offset += UInt64(step)
      }
    }
    open[index] = (fd, parent, hasher, have, have)
    return .success(have)
  }

  /// Appends bytes to file `index` at `offset` (the transfer writes each file in order).
  ///
  /// Write-behind: every ``writeBehind`` bytes the new range is handed to the disk, after
  /// waiting for the range before it. The disk then works while the file arrives instead of
  /// all at the end (the `fsync` before the rename found a whole file to write: seconds for a
  /// large file, with the progress at 100%), and a file arriving faster than the disk takes it
  /// slows the transfer (this queue waits; its writes pending on the I/O thread stop the
  /// acknowledgements) instead of filling the page cache with dirty pages.
  func write(_ index: Int, at offset: UInt64, _ data: [UInt8]) -> FileError? {
    guard let file = open[index] else { return FileError("file \(index) is not open") }
    if let code = data.withUnsafeBytes({ FileCalls.write(file.fd, at: offset, $0) }) {
      return .system("cannot write \(display(entries[index]!.path)).part in \(directory)", code)
    }
    file.hasher.update(data)
    let end = offset + UInt64(data.count)
    if end >= file.behindEnd + Self.writeBehind {
      // Errors of the disk show at the fsync in finish(_:expected:); this only schedules.
      WriteBehind.hand(
        file.fd, offset: Int64(file.behindEnd), length: Int64(end - file.behindEnd), waitingFor: Int64(file.behindStart),
        length: Int64(file.behindEnd - file.behindStart))
      open[index]!.behindStart = file.behindEnd
      open[index]!.behindEnd = end
    }
    return nil
  }

  /// The outcome of checking a complete file.
  enum Check: Sendable {
    /// Saved under this path (absolute, and below the download folder), with this hash.
    case saved(String, [String], [UInt8])
    case mismatch(String)
    case failed(FileError)
  }

  /// Checks file `index` against the sender's hash; on a match makes it durable and gives it
  /// its final name (never over an existing file), on a mismatch removes the `.part`.
  func finish(_ index: Int, expected: [UInt8]) -> Check {
    guard let file = open.removeValue(forKey: index) else { return .failed(FileError("file \(index) is not open")) }
    defer {
      close(file.fd)
      close(file.parent)
    }
    let entry = entries[index]!
    let part = entry.path.last! + ".part"
    let hash = file.hasher.finalize()
    guard let info = FileCalls.status(file.fd), UInt64(info.st_size) == entry.size else {
      _ = unlinkat(file.parent, part, 0)
      return .mismatch("\(display(entry.path)) does not have the \(entry.size) bytes offered: the .part was removed")
    }
    guard hash == expected else {
      _ = unlinkat(file.parent, part, 0)
      return .mismatch(
        "\(display(entry.path)) does not match its BLAKE2b (\(hash.hexString.prefix(16))… here, \(expected.hexString.prefix(16))… sent): it was damaged or altered on the way; the .part was removed"
      )
    }
    if FileCalls.retrying32({ fsync(file.fd) }) != 0 {
      let code = errno
      _ = unlinkat(file.parent, part, 0)
      return .failed(.system("cannot save \(display(entry.path))", code))
    }
    _ = fchmod(file.fd, entry.isExecutable ? 0o755 : 0o644)
    let base = entry.path.last!
    var number = 1
    var name = base
    while true {
      if linkat(file.parent, part, file.parent, name, 0) == 0 { break }
      let code = errno
      if code == EEXIST {
        number += 1
        name = TransferName.numbered(base, number)
        continue
      }
      // File systems without hard links: rename, after checking the name is free.
      if code == EPERM || code == EOPNOTSUPP || code == EXDEV || code == EMLINK {
        while FileCalls.exists(name, in: file.parent) {
          number += 1
          name = TransferName.numbered(base, number)
        }
        guard renameat(file.parent, part, file.parent, name) == 0 else {
          return .failed(.system("cannot rename \(display(entry.path)).part", errno))
        }
        break
      }
      return .failed(.system("cannot save \(display(entry.path))", code))
    }
    _ = unlinkat(file.parent, part, 0)
    _ = fsync(file.parent)
    let path = Array(entry.path.dropLast()) + [name]
    saved[index] = path
    return .saved(directory + "/" + path.joined(separator: "/"), path, hash)
  }

  /// Closes and removes the `.part` of every file not saved yet (a cancel or a failure).
  /// Folders made for them stay when something else is in them.
  func discard() {
    for (index, file) in open {
      _ = unlinkat(file.parent, entries[index]!.path.last! + ".part", 0)
      close(file.fd)
      close(file.parent)
    }
    open = [:]
    // Folders of this offer that hold nothing now (deepest first).
    let folders = Set(
      entries.values.flatMap { entry in
        (1..<max(entry.isDirectory ? entry.path.count + 1 : entry.path.count, 1)).map { Array(entry.path.prefix($0)) }
      })
    for folder in folders.sorted(by: { $0.count > $1.count }) where !folder.isEmpty {
      _ = unlinkat(root, folder.joined(separator: "/"), AT_REMOVEDIR)
    }
  }

  /// The absolute path a file was saved at.
  func savedPath(_ index: Int) -> String? { saved[index].map { directory + "/" + $0.joined(separator: "/") } }

  private func display(_ path: some Collection<String>) -> String { path.joined(separator: "/") }
}
