import NearbyCore

#if canImport(Glibc)
  import Glibc
#endif

/// Who a peer is: its id, kept in a state directory so it stays the same across runs (the
/// counterpart of MultipeerConnectivity's `MCPeerID`, which a program must archive itself).
///
/// ``init(directory:)`` creates the identity the first time and holds an exclusive lock on
/// the directory while the value lives: two processes with one id would be one peer twice,
/// so the second is refused with a message saying how to give it its own.
/// ``ephemeral()`` makes a fresh identity that lives in memory only (tests, tools).
public final class PeerIdentity: Sendable {
  /// The state directory, or `nil` for an ephemeral identity.
  public let directory: String?
  public let peerID: PeerID
  private let lockFD: Int32

  /// A fresh identity kept in memory only: a new peer every time.
  public static func ephemeral() -> PeerIdentity { PeerIdentity(peerID: PeerID.random()) }

  private init(peerID: PeerID) {
    self.directory = nil
    self.peerID = peerID
    self.lockFD = -1
  }

  /// The usual state directory: `$NEARBY_STATE_DIR`, else `$XDG_STATE_HOME/nearby`, else
  /// `$HOME/.local/state/nearby`.
  public static func defaultDirectory(environment: [String: String]) -> String {
    if let explicit = environment["NEARBY_STATE_DIR"], !explicit.isEmpty { return explicit }
    if let state = environment["XDG_STATE_HOME"], state.hasPrefix("/") { return state + "/nearby" }
    let home = environment["HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
    return home + "/.local/state/nearby"
  }

  /// Opens (creating if needed) the identity in `directory` and locks it.
  /// - Throws: ``IdentityError`` saying what is wrong and what to do.
  public init(directory: String) throws(IdentityError) {
    self.directory = directory
    try Self.makeDirectories(directory)
    let lockPath = directory + "/lock"
    let fd = open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
    guard fd >= 0 else { throw .unusable(directory, String(cString: strerror(errno))) }
    if flock(fd, LOCK_EX | LOCK_NB) != 0 {
      var buffer = [UInt8](repeating: 0, count: 32)
      let count = read(fd, &buffer, buffer.count)
      close(fd)
      let owner = count > 0 ? String(decoding: buffer[0..<count], as: UTF8.self).trimmingWhitespace : "?"
      throw .inUse(directory, owner: owner)
    }
    let pid = "\(getpid())\n"
    _ = ftruncate(fd, 0)
    _ = pid.withCString { pwrite(fd, $0, strlen($0), 0) }
    lockFD = fd
    do {
      peerID = try Self.loadOrCreate(directory + "/peer-id")
    } catch {
      close(fd)
      throw error
    }
  }

  deinit { if lockFD >= 0 { close(lockFD) } }

  private static func makeDirectories(_ path: String) throws(IdentityError) {
    var current = path.hasPrefix("/") ? "" : "."
    for component in path.split(separator: "/") {
      current += "/" + component
      if mkdir(current, 0o700) != 0 && errno != EEXIST {
        throw .unusable(path, "cannot create \(current): \(String(cString: strerror(errno)))")
      }
    }
  }

  private static func loadOrCreate(_ path: String) throws(IdentityError) -> PeerID {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    if fd >= 0 {
      var buffer = [UInt8](repeating: 0, count: 128)
      let count = read(fd, &buffer, buffer.count)
      close(fd)
      let text = count > 0 ? String(decoding: buffer[0..<count], as: UTF8.self).trimmingWhitespace : ""
      guard let id = PeerID(hex: text) else { throw .damaged(path) }
      return id
    }
    guard errno == ENOENT else { throw .unusable(path, String(cString: strerror(errno))) }
    let id = PeerID.random()
    let temporary = path + ".new"
    let out = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
    guard out >= 0 else { throw .unusable(path, String(cString: strerror(errno))) }
    let line = id.hex + "\n"
    let written = line.withCString { write(out, $0, strlen($0)) }
    fsync(out)
    close(out)
    guard written == line.utf8.count, rename(temporary, path) == 0 else {
      throw .unusable(path, String(cString: strerror(errno)))
    }
    return id
  }
}

/// Why the identity could not be used.
public enum IdentityError: Error, Hashable, Sendable, CustomStringConvertible {
  case inUse(String, owner: String)
  case damaged(String)
  case unusable(String, String)

  public var description: String {
    switch self {
    case .inUse(let directory, let owner):
      return
        "another nearby process (pid \(owner)) is using the identity in \(directory): give each peer on this machine its own state directory"
    case .damaged(let path):
      return "the identity file \(path) does not hold a peer id: delete it and a new identity will be created"
    case .unusable(let path, let reason):
      return "cannot use the state directory \(path): \(reason); choose another state directory"
    }
  }
}

extension String {
  var trimmingWhitespace: String {
    var scalars = Substring(self)
    while let first = scalars.first, first.isWhitespace { scalars = scalars.dropFirst() }
    while let last = scalars.last, last.isWhitespace { scalars = scalars.dropLast() }
    return String(scalars)
  }
}
