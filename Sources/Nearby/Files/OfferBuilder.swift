import NearbyCore

#if canImport(Glibc)
  import Glibc
#endif

/// Turns the paths given to ``NearbySession/sendFiles(at:to:)`` into an offer: a regular file
/// is offered under its own name, a folder as its name and everything below it (files, and
/// folders with nothing in them), found without following symbolic links. Symbolic links,
/// devices, fifos and sockets inside folders are left out (and counted); given directly, they
/// are refused. Runs on a transfer's queue, never on Swift's thread pool.
enum OfferBuilder {
  struct Offer: Sendable {
    var files: [OfferedFile]
    var items: [FileSource.Item]
    /// Entries left out (symbolic links, devices, ...).
    var skipped: [String]
  }

  static func build(_ paths: [String]) -> Result<Offer, TransferError> {
    var offer = Offer(files: [], items: [], skipped: [])
    guard !paths.isEmpty else { return .failure(.unreadable("give at least one file or folder to send")) }
    for path in paths {
      let absolute = absolutePath(path)
      var info = stat()
      guard stat(absolute, &info) == 0 else {
        return .failure(.unreadable("cannot send \(path): \(String(cString: strerror(errno)))"))
      }
      let name = baseName(absolute)
      if FileCalls.isRegular(info) {
        guard access(absolute, R_OK) == 0 else { return .failure(.unreadable("cannot read \(path): \(String(cString: strerror(errno)))")) }
        add(name, absolute, info, nested: false, to: &offer)
      } else if FileCalls.isDirectory(info) {
        if case .failure(let error) = walk(absolute, name: name, to: &offer) { return .failure(error) }
      } else {
        return .failure(.unreadable("cannot send \(path): it is not a regular file or a folder"))
      }
      guard offer.files.count <= ProtocolLimits.maximumOfferedFiles else {
        return .failure(.limit("one offer holds at most \(ProtocolLimits.maximumOfferedFiles) files and folders; send them in several"))
      }
    }
    // The OFFER frame must fit in 1 MiB (an envelope's body, through relays).
    let encoded = offer.files.reduce(1 + 16 + 2) { $0 + 8 + 1 + 2 + $1.name.utf8.count }
    guard encoded + 1 <= ProtocolLimits.maximumTransferFrameLength else {
      return .failure(.limit("the names of these files take \(encoded) bytes, more than an offer holds (1 MiB); send them in several"))
    }
    return .success(offer)
  }

  private static func add(_ name: String, _ path: String, _ info: stat, nested: Bool, to offer: inout Offer) {
    let executable = info.st_mode & 0o111 != 0
    offer.files.append(OfferedFile(name: name, size: UInt64(info.st_size), isExecutable: executable))
    offer.items.append(
      FileSource.Item(
        path: path, size: UInt64(info.st_size), modified: (Int(info.st_mtim.tv_sec), Int(info.st_mtim.tv_nsec)), isDirectory: false,
        nested: nested))
  }

  /// Adds everything below the folder `path`, named `name/...`, in name order.
  private static func walk(_ path: String, name: String, to offer: inout Offer) -> Result<Void, TransferError> {
    let fd = FileCalls.retrying32 { open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC) }
    guard fd >= 0 else { return .failure(.unreadable("cannot read the folder \(path): \(String(cString: strerror(errno)))")) }
    guard let stream = fdopendir(fd) else {
      close(fd)
      return .failure(.unreadable("cannot read the folder \(path): \(String(cString: strerror(errno)))"))
    }
    defer { closedir(stream) }
    var children: [String] = []
    while let entry = readdir(stream) {
      let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
        String(validating: raw.prefix { $0 != 0 }, as: UTF8.self)
      }
      guard let child = name else {
        offer.skipped.append(path + "/(a name that is not UTF-8)")
        continue
      }
      if child == "." || child == ".." { continue }
      children.append(child)
    }
    children.sort()
    if children.isEmpty {
      offer.files.append(OfferedFile(name: name, size: 0, isDirectory: true))
      offer.items.append(FileSource.Item(path: path, size: 0, modified: (0, 0), isDirectory: true, nested: true))
      return .success(())
    }
    for child in children {
      guard offer.files.count <= ProtocolLimits.maximumOfferedFiles else { return .success(()) }
      var info = stat()
      let childPath = path + "/" + child
      guard fstatat(fd, child, &info, AT_SYMLINK_NOFOLLOW) == 0 else {
        offer.skipped.append(childPath)
        continue
      }
      if FileCalls.isRegular(info) {
        add(name + "/" + child, childPath, info, nested: true, to: &offer)
      } else if FileCalls.isDirectory(info) {
        if case .failure(let error) = walk(childPath, name: name + "/" + child, to: &offer) { return .failure(error) }
      } else {
        offer.skipped.append(childPath)
      }
    }
    return .success(())
  }

  static func absolutePath(_ path: String) -> String {
    var trimmed = path
    while trimmed.count > 1, trimmed.hasSuffix("/") { trimmed.removeLast() }
    if trimmed.hasPrefix("/") { return trimmed }
    var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
    guard getcwd(&buffer, buffer.count) != nil else { return trimmed }
    let cwd = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    return trimmed == "." ? cwd : (cwd == "/" ? "" : cwd) + "/" + trimmed
  }

  /// The last component, resolved for `.` and `..` through the real path.
  static func baseName(_ path: String) -> String {
    var name = path.split(separator: "/").last.map(String.init) ?? "_"
    if name == "." || name == ".." || name.isEmpty {
      if let real = realpath(path, nil) {
        name = String(cString: real).split(separator: "/").last.map(String.init) ?? "_"
        free(real)
      }
    }
    return name.isEmpty ? "_" : name
  }
}
