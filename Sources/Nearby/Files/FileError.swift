import NearbyCore
import NearbySystem

#if canImport(Glibc)
  import Glibc
#endif

/// A file operation of a transfer that failed: what, on which file, and why, in words for
/// people ("cannot write photos/a.jpg.part in /home/bob/Downloads/nearby: No space left on
/// device (errno 28)").
struct FileError: Error, Hashable, Sendable, CustomStringConvertible {
  let description: String
  /// The errno, when a system call failed.
  let code: Int32?

  init(_ description: String, code: Int32? = nil) {
    self.description = description
    self.code = code
  }

  /// `what`: `errno`'s text, with a hint when there is an obvious one.
  static func system(_ what: String, _ code: Int32) -> FileError {
    var text = "\(what): \(SystemError.describe(code))"
    switch code {
    case ENOSPC, EDQUOT: text += "; free some space (or choose another download folder) and send again"
    case EACCES, EPERM: text += "; check the permissions"
    case ELOOP: text += "; it is a symbolic link, which transfers never follow"
    default: break
    }
    return FileError(text, code: code)
  }

  var isNoSpace: Bool { code == ENOSPC || code == EDQUOT }
}

/// An errno as an error.
struct Errno: Error, Hashable, Sendable {
  let code: Int32
}

/// System calls of the file side, retrying EINTR. Every path below a download folder is
/// opened relative to a directory descriptor with `O_NOFOLLOW`.
enum FileCalls {
  static func retrying(_ body: () -> Int) -> Int {
    while true {
      let result = body()
      if result >= 0 || errno != EINTR { return result }
    }
  }

  static func retrying32(_ body: () -> Int32) -> Int32 {
    while true {
      let result = body()
      if result >= 0 || errno != EINTR { return result }
    }
  }

  /// Reads up to `count` bytes at `offset` (fewer only at the end of the file).
  static func read(_ fd: Int32, at offset: UInt64, count: Int, into buffer: UnsafeMutableRawBufferPointer) -> Result<Int, Errno> {
    var done = 0
    while done < count {
      let result = retrying { pread(fd, buffer.baseAddress! + done, count - done, off_t(offset) + off_t(done)) }
      if result < 0 { return .failure(Errno(code: errno)) }
      if result == 0 { break }
      done += result
    }
    return .success(done)
  }

  /// Writes all of `bytes` at `offset`.
  static func write(_ fd: Int32, at offset: UInt64, _ bytes: UnsafeRawBufferPointer) -> Int32? {
    var done = 0
    while done < bytes.count {
      let result = retrying { pwrite(fd, bytes.baseAddress! + done, bytes.count - done, off_t(offset) + off_t(done)) }
      if result < 0 { return errno }
      done += result
    }
    return nil
  }

  /// `stat` of a descriptor.
  static func status(_ fd: Int32) -> stat? {
    var info = stat()
    return fstat(fd, &info) == 0 ? info : nil
  }

  /// Whether `name` exists in `directory` (without following a symlink).
  static func exists(_ name: String, in directory: Int32) -> Bool {
    var info = stat()
    return fstatat(directory, name, &info, AT_SYMLINK_NOFOLLOW) == 0
  }

  /// Opens the folder `name` in `directory`, never through a symlink.
  static func openDirectory(_ name: String, in directory: Int32) -> Int32 {
    retrying32 { openat(directory, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) }
  }

  /// Bytes free for us in the file system of `fd`.
  static func freeBytes(_ fd: Int32) -> UInt64? {
    var info = statvfs()
    guard fstatvfs(fd, &info) == 0 else { return nil }
    return UInt64(info.f_bavail) * UInt64(info.f_frsize)
  }

  /// Bytes free for us where `path` is, or would be made (its nearest existing folder).
  static func freeBytes(at path: String) -> UInt64? {
    var current = path
    while true {
      var info = statvfs()
      if statvfs(current, &info) == 0 { return UInt64(info.f_bavail) * UInt64(info.f_frsize) }
      guard errno == ENOENT, let slash = current.lastIndex(of: "/") else { return nil }
      current = slash == current.startIndex ? "/" : String(current[..<slash])
    }
  }

  static func isRegular(_ info: stat) -> Bool { info.st_mode & S_IFMT == S_IFREG }
  static func isDirectory(_ info: stat) -> Bool { info.st_mode & S_IFMT == S_IFDIR }
}

extension UInt64 {
  /// `1.5 MiB`, `200 B`: sizes for people.
  package var byteCount: String {
    let units = ["B", "KiB", "MiB", "GiB", "TiB"]
    var value = Double(self)
    var unit = 0
    while value >= 1024, unit < units.count - 1 {
      value /= 1024
      unit += 1
    }
    if unit == 0 { return "\(self) B" }
    let tenths = Int((value * 10).rounded())
    return "\(tenths / 10).\(tenths % 10) \(units[unit])"
  }
}
