import NearbyCore
import NearbyCrypto

#if canImport(Glibc)
  import Glibc
#endif

/// The files of an outgoing transfer, read in order on the transfer's queue (never on
/// Swift's thread pool), with each file's BLAKE2b computed as it is read.
///
/// Chunks may be read again after a rewind (a resume, a RESEND): the hash only advances over
/// bytes it has not seen, so it covers every byte once, in order. A resume that starts past
/// what was hashed (after a restart) first reads the skipped bytes to hash them. A file that
/// no longer has the size or modification time it had when it was offered fails the read:
/// the receiver would get something else than what was offered.
///
/// Not thread-safe: only its transfer's queue touches it.
final class FileSource: @unchecked Sendable {
  /// One offered file on our disk.
  struct Item: Hashable, Sendable {
    /// Absolute path.
    var path: String
    var size: UInt64
    /// Seconds and nanoseconds of its modification time when it was offered.
    var modified: (seconds: Int, nanoseconds: Int)
    var isDirectory: Bool
    /// Found inside a folder: opened with O_NOFOLLOW (a symlink put there later is refused).
    var nested: Bool

    static func == (lhs: Item, rhs: Item) -> Bool {
      lhs.path == rhs.path && lhs.size == rhs.size && lhs.modified == rhs.modified && lhs.isDirectory == rhs.isDirectory
        && lhs.nested == rhs.nested
    }

    func hash(into hasher: inout Hasher) {
      hasher.combine(path)
      hasher.combine(size)
    }
  }

  /// A read: the bytes, and the file's hash once its last byte has been read.
  struct Chunk: Sendable {
    var data: [UInt8]
    var hash: [UInt8]?
  }

  let items: [Item]
  private var fd: Int32 = -1
  private var openIndex = -1
  /// The hash of each file read in part, and how far: kept per file, so that reading
  /// another file in between (a RESEND of an earlier one) does not start it over. (One
  /// hash for the file being read made a receiver's RESEND of an ended file, about 40 bytes,
  /// cost us a second reading and hashing of everything sent of the next one, as often as
  /// it liked.)
  private var partial: [Int: (hasher: FileHasher, upTo: UInt64)] = [:]
  private var hashes: [Int: [UInt8]] = [:]

  init(items: [Item]) { self.items = items }

  deinit { if fd >= 0 { close(fd) } }

  /// The hash of a file read to its end, if it was.
  func hash(of index: Int) -> [UInt8]? { hashes[index] }

  /// Reads `count` bytes of file `index` at `offset` (`count` 0 at the end gives the hash).
  func read(index: Int, offset: UInt64, count: Int) -> Result<Chunk, FileError> {
    let item = items[index]
    if let opened = open(index), case .failure(let error) = opened { return .failure(error) }
    if hashes[index] == nil, partial[index] == nil { partial[index] = (FileHasher(), 0) }
    var hashedUpTo = partial[index]?.upTo ?? item.size
    let hasher = partial[index]?.hasher
    defer { if partial[index] != nil { partial[index]!.upTo = hashedUpTo } }
    // A resume past what was hashed: hash the bytes before it first.
    while hashes[index] == nil, hashedUpTo < offset {
      let step = Int(min(offset - hashedUpTo, 1 << 20))
      var gap = [UInt8](repeating: 0, count: step)
      let result = gap.withUnsafeMutableBytes { FileCalls.read(fd, at: hashedUpTo, count: step, into: $0) }
      switch result {
      case .failure(let error): return .failure(.system("cannot read \(item.path)", error.code))
      case .success(let got) where got < step:
        return .failure(changed(item, "it is shorter than the \(item.size) bytes offered"))
      case .success:
        hasher?.update(gap)
        hashedUpTo += UInt64(step)
      }
    }
    let wanted = Int(min(UInt64(count), item.size - min(offset, item.size)))
    // Read straight into the array's storage: no zero-filling of bytes about to be read.
    var result: Result<Int, Errno> = .success(0)
    let data = [UInt8](unsafeUninitializedCapacity: wanted) { buffer, initialized in
      result = wanted > 0 ? FileCalls.read(fd, at: offset, count: wanted, into: UnsafeMutableRawBufferPointer(buffer)) : .success(0)
      initialized = (try? result.get()) ?? 0
    }
    switch result {
    case .failure(let error): return .failure(.system("cannot read \(item.path)", error.code))
    case .success(let got) where got < wanted:
      return .failure(changed(item, "it is shorter than the \(item.size) bytes offered"))
    case .success: break
    }
    let end = offset + UInt64(wanted)
    if hashes[index] == nil, offset <= hashedUpTo, end > hashedUpTo {
      let skip = Int(hashedUpTo - offset)
      data.withUnsafeBytes { hasher?.update(UnsafeRawBufferPointer(rebasing: $0[skip...])) }
      hashedUpTo = end
    }
    if hashes[index] == nil, hashedUpTo == item.size {
      // The whole file is read: it must not have grown or changed meanwhile.
      if let info = FileCalls.status(fd), UInt64(info.st_size) != item.size || !sameTime(info, item) {
        return .failure(changed(item, "it was modified while it was being sent"))
      }
      hashes[index] = hasher?.finalize()
      partial[index] = nil
    }
    return .success(Chunk(data: data, hash: end == item.size ? hashes[index] : nil))
  }

  /// Opens file `index` (closing the previous one) and checks it is still what was offered.
  private func open(_ index: Int) -> Result<Void, FileError>? {
    guard openIndex != index else { return nil }
    if fd >= 0 { close(fd) }
    fd = -1
    openIndex = -1
    let item = items[index]
    let flags = O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK | (item.nested ? O_NOFOLLOW : 0)
    let opened = FileCalls.retrying32 { Glibc.open(item.path, flags) }
    guard opened >= 0 else { return .failure(.system("cannot open \(item.path)", errno)) }
    guard let info = FileCalls.status(opened), FileCalls.isRegular(info) else {
      close(opened)
      return .failure(changed(item, "it is not a regular file any more"))
    }
    guard UInt64(info.st_size) == item.size, sameTime(info, item) else {
      close(opened)
      return .failure(changed(item, "it was modified since it was offered (\(UInt64(info.st_size)) bytes now, \(item.size) offered)"))
    }
    _ = posix_fadvise(opened, 0, 0, POSIX_FADV_SEQUENTIAL)
    fd = opened
    openIndex = index
    return .success(())
  }

  private func sameTime(_ info: stat, _ item: Item) -> Bool {
    info.st_mtim.tv_sec == item.modified.seconds && info.st_mtim.tv_nsec == item.modified.nanoseconds
  }

  private func changed(_ item: Item, _ detail: String) -> FileError {
    FileError("\(item.path) changed: \(detail); send it again")
  }
}
