import NearbySystem

#if canImport(Glibc)
  import Glibc
#endif

/// A directory of ours for the chat's files (the history of what was typed, the logs of the
/// conversations), opened the way `Nearby` opens the state directory: refused when it is a
/// symbolic link, another user's or writable by others; every file in it opened relative to
/// it with `O_NOFOLLOW`, created with mode 0600, and replaced atomically (a new file,
/// `fsync`, `renameat`).
public final class PrivateDirectory: Sendable {
  /// Why the directory or a file in it cannot be used, and what to do.
  public struct Failure: Error, CustomStringConvertible, Sendable {
    public let path: String
    public let reason: String
    public let fix: String?
    public var description: String { "\(path): \(reason)" + (fix.map { "; \($0)" } ?? "") }
  }

  public let path: String
  private let fd: Int32

  /// Opens `path`, creating it (mode 0700) when it is missing.
  /// - Throws: ``Failure`` when it cannot be opened or is not safe to use.
  public convenience init(_ path: String) throws(Failure) {
    if mkdir(path, 0o700) != 0 && errno != EEXIST {
      throw Failure(path: path, reason: "cannot create it: \(SystemError.describe(errno))", fix: nil)
    }
    try self.init(path: path, fd: open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC))
  }

  private init(path: String, fd: Int32) throws(Failure) {
    self.path = path
    guard fd >= 0 else {
      let code = errno
      if code == ELOOP || code == ENOTDIR {
        throw Failure(path: path, reason: "it is a symbolic link or not a directory", fix: "remove it, or choose another state directory")
      }
      throw Failure(path: path, reason: SystemError.describe(code), fix: nil)
    }
    var info = stat()
    let statResult = fstat(fd, &info)
    let code = errno
    if statResult != 0 || info.st_uid != geteuid() || info.st_mode & 0o022 != 0 { close(fd) }
    guard statResult == 0 else { throw Failure(path: path, reason: SystemError.describe(code), fix: nil) }
    guard info.st_uid == geteuid() else {
      throw Failure(path: path, reason: "it belongs to user id \(info.st_uid), not to you (\(geteuid()))", fix: "use a state directory of your own")
    }
    guard info.st_mode & 0o022 == 0 else {
      throw Failure(path: path, reason: "others may write to it (mode \(String(info.st_mode & 0o777, radix: 8)))", fix: "run chmod 700 \(path)")
    }
    self.fd = fd
  }

  deinit { close(fd) }

  /// A directory in this one, created (mode 0700) when missing.
  public func subdirectory(_ name: String) throws(Failure) -> PrivateDirectory {
    if mkdirat(fd, name, 0o700) != 0 && errno != EEXIST {
      throw Failure(path: full(name), reason: "cannot create it: \(SystemError.describe(errno))", fix: nil)
    }
    return try PrivateDirectory(path: full(name), fd: openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC))
  }

  /// The last `limit` bytes of a file of ours (from the start of a line), or nil when there
  /// is no such file.
  public func readTail(_ name: String, limit: Int) throws(Failure) -> [UInt8]? {
    let file = openat(fd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK)
    guard file >= 0 else {
      if errno == ENOENT { return nil }
      throw failure(name, errno)
    }
    defer { close(file) }
    let size = try check(file, name)
    var skipPartialLine = false
    if size > limit {
      _ = lseek(file, off_t(size - limit), SEEK_SET)
      skipPartialLine = true
    }
    var contents: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 65536)
    while contents.count < limit {
      let count = buffer.withUnsafeMutableBytes { Glibc.read(file, $0.baseAddress, min($0.count, limit - contents.count)) }
      if count < 0 {
        if errno == EINTR { continue }
        throw failure(name, errno)
      }
      if count == 0 { break }
      contents += buffer[0..<count]
    }
    if skipPartialLine, let newline = contents.firstIndex(of: UInt8(ascii: "\n")) { contents.removeFirst(newline + 1) }
    return contents
  }

  /// Appends bytes to a file of ours (created with mode 0600). - Returns: the file's size after.
  @discardableResult
  public func append(_ name: String, _ bytes: [UInt8]) throws(Failure) -> Int {
    let file = openat(fd, name, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0o600)
    guard file >= 0 else { throw failure(name, errno) }
    defer { close(file) }
    _ = try check(file, name)
    try writeAll(file, bytes, name)
    var info = stat()
    return fstat(file, &info) == 0 ? Int(info.st_size) : 0
  }

  /// Replaces a file atomically with `bytes` (mode 0600).
  public func replace(_ name: String, _ bytes: [UInt8]) throws(Failure) {
    let temporary = ".\(name).\(getpid()).new"
    _ = unlinkat(fd, temporary, 0)
    let file = openat(fd, temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
    guard file >= 0 else { throw failure(name, errno) }
    do {
      try writeAll(file, bytes, name)
    } catch {
      close(file)
      _ = unlinkat(fd, temporary, 0)
      throw error
    }
    let synced = fsync(file) == 0
    let code = errno
    close(file)
    guard synced, renameat(fd, temporary, fd, name) == 0 else {
      let failed = synced ? errno : code
      _ = unlinkat(fd, temporary, 0)
      throw failure(name, failed)
    }
  }

  public func full(_ name: String) -> String { path.hasSuffix("/") ? path + name : path + "/" + name }

  private func failure(_ name: String, _ code: Int32) -> Failure {
    code == ELOOP
      ? Failure(path: full(name), reason: "it is a symbolic link", fix: "remove it")
      : Failure(path: full(name), reason: SystemError.describe(code), fix: nil)
  }

  /// Checks that an open file is a regular file of ours that only we can read (a looser mode
  /// is tightened: it holds what was said). - Returns: its size.
  private func check(_ file: Int32, _ name: String) throws(Failure) -> Int {
    var info = stat()
    guard fstat(file, &info) == 0 else { throw failure(name, errno) }
    guard info.st_mode & S_IFMT == S_IFREG else { throw Failure(path: full(name), reason: "it is not a regular file", fix: "remove it") }
    guard info.st_uid == geteuid() else {
      throw Failure(path: full(name), reason: "it belongs to user id \(info.st_uid), not to you (\(geteuid()))", fix: "remove it")
    }
    if info.st_mode & 0o077 != 0 { _ = fchmod(file, 0o600) }
    return Int(info.st_size)
  }

  private func writeAll(_ file: Int32, _ bytes: [UInt8], _ name: String) throws(Failure) {
    var written = 0
    while written < bytes.count {
      let count = bytes.withUnsafeBytes { Glibc.write(file, $0.baseAddress! + written, $0.count - written) }
      if count < 0 {
        if errno == EINTR { continue }
        throw failure(name, errno)
      }
      written += count
    }
  }
}
