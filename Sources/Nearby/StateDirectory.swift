import NearbySystem

#if canImport(Glibc)
  import Glibc
#endif

/// A peer's state directory, opened safely: created with mode 0700, refused when another
/// user owns it or others may write to it, and every file in it opened relative to the
/// directory with `O_NOFOLLOW`, so a planted symlink is never followed, and written
/// atomically (a new file, `fsync`, `rename`).
final class StateDirectory: Sendable {
  let path: String
  private let fd: Int32

  /// Opens (creating what is missing, mode 0700) and checks the directory.
  /// - Throws: ``IdentityError`` saying what is wrong and how to fix it.
  init(_ path: String) throws(IdentityError) {
    self.path = path
    try Self.makeDirectories(path)
    let fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
    guard fd >= 0 else {
      let code = errno
      if code == ELOOP || code == ENOTDIR {
        throw .unsafe(path, "it is a symbolic link or not a directory", fix: "remove it, or choose another state directory")
      }
      throw .unusable(path, SystemError.describe(code))
    }
    var info = stat()
    guard fstat(fd, &info) == 0 else {
      let code = errno
      close(fd)
      throw .unusable(path, SystemError.describe(code))
    }
    if info.st_uid != geteuid() {
      close(fd)
      throw .unsafe(path, "it belongs to user id \(info.st_uid), not to you (\(geteuid()))", fix: "use a state directory of your own")
    }
    if info.st_mode & 0o022 != 0 {
      close(fd)
      throw .unsafe(
        path, "others may write to it (mode \(String(info.st_mode & 0o777, radix: 8)))", fix: "run chmod 700 \(path)")
    }
    self.fd = fd
  }

  deinit { close(fd) }

  /// The contents of a regular file of ours, or `nil` when there is none.
  /// - Parameter secret: the file holds a secret: refused unless only we can read it.
  func read(_ name: String, secret: Bool = false, limit: Int = 1 << 20) throws(IdentityError) -> [UInt8]? {
    let file = openat(fd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK)
    guard file >= 0 else {
      let code = errno
      if code == ENOENT { return nil }
      if code == ELOOP { throw .unsafe(full(name), "it is a symbolic link", fix: "remove it") }
      throw .unusable(full(name), SystemError.describe(code))
    }
    defer { close(file) }
    try check(file, name, secret: secret)
    var contents: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 4096)
    while true {
      let count = buffer.withUnsafeMutableBytes { Glibc.read(file, $0.baseAddress, $0.count) }
      if count < 0 {
        if errno == EINTR { continue }
        throw .unusable(full(name), SystemError.describe(errno))
      }
      if count == 0 { break }
      contents += buffer[0..<count]
      if contents.count > limit { throw .unusable(full(name), "it is larger than \(limit) bytes") }
    }
    return contents
  }

  /// Replaces a file atomically with `contents` (mode 0600).
  func write(_ name: String, _ contents: [UInt8]) throws(IdentityError) {
    let temporary = ".\(name).\(getpid()).new"
    _ = unlinkat(fd, temporary, 0)
    let file = openat(fd, temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
    guard file >= 0 else { throw .unusable(full(name), SystemError.describe(errno)) }
    var written = 0
    while written < contents.count {
      let count = contents.withUnsafeBytes { Glibc.write(file, $0.baseAddress! + written, $0.count - written) }
      if count < 0 {
        if errno == EINTR { continue }
        let code = errno
        close(file)
        _ = unlinkat(fd, temporary, 0)
        throw .unusable(full(name), SystemError.describe(code))
      }
      written += count
    }
    let synced = fsync(file) == 0
    let code = errno
    close(file)
    guard synced, renameat(fd, temporary, fd, name) == 0 else {
      let failure = synced ? errno : code
      _ = unlinkat(fd, temporary, 0)
      throw .unusable(full(name), SystemError.describe(failure))
    }
    _ = fsync(fd)
  }

  /// Opens (creating) a regular file of ours for locking; the caller closes it.
  func openLockFile(_ name: String) throws(IdentityError) -> Int32 {
    let file = openat(fd, name, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0o600)
    guard file >= 0 else {
      let code = errno
      if code == ELOOP { throw .unsafe(full(name), "it is a symbolic link", fix: "remove it") }
      throw .unusable(full(name), SystemError.describe(code))
    }
    do {
      try check(file, name, secret: false)
    } catch {
      close(file)
      throw error
    }
    return file
  }

  func remove(_ name: String) { _ = unlinkat(fd, name, 0) }

  func full(_ name: String) -> String { path.hasSuffix("/") ? path + name : path + "/" + name }

  private func check(_ file: Int32, _ name: String, secret: Bool) throws(IdentityError) {
    var info = stat()
    guard fstat(file, &info) == 0 else { throw .unusable(full(name), SystemError.describe(errno)) }
    guard info.st_mode & S_IFMT == S_IFREG else {
      throw .unsafe(full(name), "it is not a regular file", fix: "remove it")
    }
    if info.st_uid != geteuid() {
      throw .unsafe(full(name), "it belongs to user id \(info.st_uid), not to you (\(geteuid()))", fix: "remove it")
    }
    if info.st_nlink != 1 {
      // A hard link planted while the directory was open to others: writing to it (the lock
      // file is truncated) would change the file behind the other name.
      throw .unsafe(full(name), "it has \(info.st_nlink) names (hard links): another path leads to the same file", fix: "remove it")
    }
    let mode = String(info.st_mode & 0o777, radix: 8)
    if info.st_mode & 0o022 != 0 {
      throw .unsafe(
        full(name), "others may write to it (mode \(mode))" + (secret ? ": the key may have been replaced" : ""),
        fix: secret ? "delete it to make a new identity" : "run chmod 600 \(full(name))")
    }
    if secret, info.st_mode & 0o044 != 0 {
      throw .unsafe(
        full(name), "others may read it (mode \(mode)): the key may be known to them",
        fix: "if nobody else could have read it, run chmod 600 \(full(name)); otherwise delete it to make a new identity")
    }
  }

  private static func makeDirectories(_ path: String) throws(IdentityError) {
    var current = path.hasPrefix("/") ? "" : "."
    for component in path.split(separator: "/") {
      current += "/" + component
      if mkdir(current, 0o700) != 0 && errno != EEXIST {
        throw .unusable(path, "cannot create \(current): \(SystemError.describe(errno))")
      }
    }
  }
}
