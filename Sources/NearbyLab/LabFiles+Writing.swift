#if canImport(Glibc)
  import Glibc
#endif

extension LabFiles {
  /// Writes `text` to `path` (created with mode 0644, or truncated; `append` adds to it).
  /// - Throws: ``LANError`` naming the file and the reason.
  static func write(_ text: String, to path: String, append: Bool = false) throws(LANError) {
    let fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | (append ? O_APPEND : O_TRUNC), 0o644)
    guard fd >= 0 else { throw .failed("cannot write \(path): \(String(cString: strerror(errno)))") }
    defer { close(fd) }
    var bytes = Array(text.utf8)
    var offset = 0
    while offset < bytes.count {
      let written = bytes.withUnsafeMutableBytes { Glibc.write(fd, $0.baseAddress! + offset, $0.count - offset) }
      if written < 0 && errno == EINTR { continue }
      guard written > 0 else { throw .failed("cannot write \(path): \(String(cString: strerror(errno)))") }
      offset += written
    }
    bytes.removeAll()
  }

  /// Creates `path` and its missing parents (like `mkdir -p`).
  /// - Throws: ``LANError`` naming the directory that could not be made.
  static func makeDirectories(_ path: String) throws(LANError) {
    var current = path.hasPrefix("/") ? "" : "."
    for component in path.split(separator: "/") {
      current += "/" + component
      if mkdir(current, 0o755) != 0 && errno != EEXIST {
        throw .failed("cannot create \(current): \(String(cString: strerror(errno)))")
      }
    }
  }

  /// The size of a file in bytes (0 when it does not exist).
  static func size(_ path: String) -> Int {
    var info = stat()
    return stat(path, &info) == 0 ? Int(info.st_size) : 0
  }

  /// A file's text after its first `offset` bytes (at most 1 MiB of it).
  static func read(_ path: String, from offset: Int) -> String? {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    guard lseek(fd, off_t(offset), SEEK_SET) >= 0 else { return nil }
    var bytes: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 4096)
    while bytes.count < 1 << 20 {
      let count = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
      if count < 0 && errno == EINTR { continue }
      if count <= 0 { break }
      bytes.append(contentsOf: buffer[0..<count])
    }
    return String(decoding: bytes, as: UTF8.self)
  }

  /// Whether something exists at `path` (symbolic links not followed).
  static func exists(_ path: String) -> Bool {
    var info = stat()
    return lstat(path, &info) == 0
  }

  /// Whether `path` is a Unix socket.
  static func isSocket(_ path: String) -> Bool {
    var info = stat()
    return stat(path, &info) == 0 && info.st_mode & S_IFMT == S_IFSOCK
  }

  /// The first line of a small file, without its newline; nil when it cannot be read.
  static func firstLine(_ path: String) -> String? {
    guard let text = read(path) else { return nil }
    return text.split(separator: "\n", omittingEmptySubsequences: false).first.map(String.init)
  }

  /// The last `count` lines of a file, for error messages about a daemon's log.
  static func tail(_ path: String, lines count: Int = 25) -> String {
    guard let text = read(path), !text.isEmpty else { return "(\(path) is empty)" }
    let lines = text.split(separator: "\n", omittingEmptySubsequences: false).suffix(count + 1).drop { $0.isEmpty }
    return "last lines of \(path):\n" + lines.map { "    " + $0 }.joined(separator: "\n")
  }
}
