import Dispatch
import NearbyCore
import NearbyCrypto
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// Who a peer is: an Ed25519 key pair whose public key gives the peer id, kept in a state
/// directory so it stays the same across runs (the counterpart of MultipeerConnectivity's
/// `MCPeerID`, which a program must archive itself).
///
/// The id is derived from the key (PROTOCOL.md, version 2), so nobody can claim it without
/// the secret key: sessions prove it in every handshake.
///
/// ``init(directory:)`` creates the identity the first time (the key file `identity`, mode
/// 0600, in a directory of mode 0700) and holds an exclusive lock on the directory while the
/// value lives: two processes with one id would be one peer twice, so the second is refused
/// with a message saying how to give it its own. ``ephemeral()`` makes a fresh identity that
/// lives in memory only (tests, tools).
public final class PeerIdentity: Sendable {
  /// The state directory, or `nil` for an ephemeral identity.
  public let directory: String?
  public var peerID: PeerID { keyPair.peerID }
  /// Something the user should hear once, such as a new identity replacing one of an older
  /// Nearby; `nil` usually.
  public let notice: String?
  let keyPair: IdentityKeyPair
  let state: StateDirectory?
  private let lockFD: Int32
  /// The peers this identity met (the `known-peers` file, or memory only when ephemeral).
  private let known: Mutex<[PeerID: KnownPeer]>
  /// Writes of the known-peers file that a session asks for as it meets peers: on a queue of
  /// their own, coalesced (a relay meeting 200 peers must not fsync 200 times on its I/O thread).
  private let saves = DispatchQueue(label: "nearby.known-peers")
  private let savePending = Mutex(false)

  static let keyFileName = "identity"
  /// Where protocol version 1 kept a random id (replaced by a key).
  static let version1FileName = "peer-id"

  /// A fresh identity kept in memory only: a new peer every time.
  public static func ephemeral() -> PeerIdentity {
    var random = SystemCryptoRandom()
    return PeerIdentity(keyPair: .generate(using: &random))
  }

  init(keyPair: IdentityKeyPair) {
    self.directory = nil
    self.keyPair = keyPair
    self.state = nil
    self.notice = nil
    self.lockFD = -1
    self.known = Mutex([:])
  }

  /// The usual state directory: `$NEARBY_STATE_DIR`, else `$XDG_STATE_HOME/nearby`, else
  /// `$HOME/.local/state/nearby`.
  /// - Throws: ``IdentityError/noHome`` when none of them is set (there is no fallback into
  ///   a shared directory such as `/tmp`).
  public static func defaultDirectory(environment: [String: String]) throws(IdentityError) -> String {
    if let explicit = environment["NEARBY_STATE_DIR"], !explicit.isEmpty { return explicit }
    if let state = environment["XDG_STATE_HOME"], state.hasPrefix("/") { return state + "/nearby" }
    guard let home = environment["HOME"], home.hasPrefix("/") else { throw .noHome }
    return home + "/.local/state/nearby"
  }

  /// Opens (creating if needed) the identity in `directory` and locks it.
  /// - Throws: ``IdentityError`` saying what is wrong and what to do.
  public init(directory: String) throws(IdentityError) {
    self.directory = directory
    let state = try StateDirectory(directory)
    let fd = try state.openLockFile("lock")
    var attempts = 0
    while flock(fd, LOCK_EX | LOCK_NB) != 0 {
      var buffer = [UInt8](repeating: 0, count: 32)
      let count = pread(fd, &buffer, buffer.count, 0)
      let owner = count > 0 ? String(decoding: buffer[0..<count], as: UTF8.self).trimmingWhitespace : "?"
      // Our own pid: the lock of an identity this process just closed, still shared for a
      // moment with a child being spawned (it holds copies of our descriptors until it
      // executes). Such a copy goes within milliseconds; another process's lock does not.
      attempts += 1
      guard owner == "\(getpid())", attempts <= 50 else {
        close(fd)
        throw .inUse(directory, owner: owner)
      }
      usleep(2_000)
    }
    let pid = "\(getpid())\n"
    _ = ftruncate(fd, 0)
    _ = pid.withCString { pwrite(fd, $0, strlen($0), 0) }
    do {
      (keyPair, notice) = try Self.loadOrCreate(state)
      known = Mutex(try Self.loadKnownPeers(state))
    } catch {
      close(fd)
      throw error
    }
    self.state = state
    lockFD = fd
  }

  // MARK: Known peers

  /// The peers this identity has had sessions with, first met first.
  public var knownPeers: [KnownPeer] {
    known.withLock { Array($0.values) }.sorted { $0.firstSeen == $1.firstSeen ? $0.id < $1.id : $0.firstSeen < $1.firstSeen }
  }

  /// The known peers of the identity in `directory`, read without taking its lock (a
  /// running chat may hold it: it replaces the file atomically, so this sees a whole one).
  /// - Throws: ``IdentityError`` when the directory or the file cannot be used.
  public static func knownPeers(in directory: String) throws(IdentityError) -> [KnownPeer] {
    var info = stat()
    guard stat(directory, &info) == 0 else { return [] }
    let state = try StateDirectory(directory)
    return try loadKnownPeers(state).values.sorted { $0.firstSeen == $1.firstSeen ? $0.id < $1.id : $0.firstSeen < $1.firstSeen }
  }

  /// Forgets a known peer (its verification too).
  /// - Returns: whether it was known.
  /// - Throws: ``IdentityError`` when the file cannot be written (nothing changed then).
  @discardableResult
  public func forget(_ id: PeerID) throws(IdentityError) -> Bool {
    try update { $0.removeValue(forKey: id) != nil }
  }

  func knownPeer(_ id: PeerID) -> KnownPeer? { known.withLock { $0[id] } }

  var verifiedPeerIDs: Set<PeerID> { known.withLock { Set($0.values.filter(\.isVerified).map(\.id)) } }

  /// Remembers a peer met in a session (its key proven by the handshake), or its new name.
  func record(_ peer: Peer, publicKey: [UInt8], now: UInt64) throws(IdentityError) {
    let hex = publicKey.hexString
    try update { peers in
      if var known = peers[peer.id] {
        guard known.name != peer.name else { return false }
        known.name = peer.name
        peers[peer.id] = known
        return true
      }
      peers[peer.id] = KnownPeer(id: peer.id, publicKey: hex, name: peer.name, firstSeen: now, isVerified: false)
      return true
    }
  }

  /// ``record(_:publicKey:now:)``, with the file written later on a queue of its own
  /// (coalesced); `failed` hears why when it cannot be written.
  func recordLater(_ peer: Peer, publicKey: [UInt8], now: UInt64, failed: @escaping @Sendable (IdentityError) -> Void) {
    let hex = publicKey.hexString
    let changed = known.withLock { peers -> Bool in
      if var known = peers[peer.id] {
        guard known.name != peer.name else { return false }
        known.name = peer.name
        peers[peer.id] = known
        return true
      }
      peers[peer.id] = KnownPeer(id: peer.id, publicKey: hex, name: peer.name, firstSeen: now, isVerified: false)
      return true
    }
    guard changed, let state else { return }
    let schedule = savePending.withLock { pending -> Bool in
      defer { pending = true }
      return !pending
    }
    guard schedule else { return }
    saves.async { [self] in
      savePending.withLock { $0 = false }
      let snapshot = known.withLock { Array($0.values) }
      do throws(IdentityError) {
        try state.write(KnownPeersFile.name, Array(KnownPeersFile.encode(snapshot).utf8))
      } catch {
        failed(error)
      }
    }
  }

  /// Waits until the writes asked for so far are done (tests, and before a process exits).
  func waitForSaves() { saves.sync {} }

  /// Marks a known peer verified (the person compared the code).
  func setVerified(_ id: PeerID, _ verified: Bool) throws(IdentityError) {
    try update { peers in
      guard var peer = peers[id], peer.isVerified != verified else { return false }
      peer.isVerified = verified
      peers[id] = peer
      return true
    }
  }

  /// Changes the known peers and, when `change` says it changed something, writes the file;
  /// if writing fails, the change is undone and the error thrown.
  @discardableResult
  private func update(_ change: (inout [PeerID: KnownPeer]) -> Bool) throws(IdentityError) -> Bool {
    let result = known.withLock { peers -> (changed: Bool, before: [PeerID: KnownPeer], after: [PeerID: KnownPeer]) in
      let before = peers
      let changed = change(&peers)
      return (changed, before, peers)
    }
    guard result.changed else { return false }
    guard let state else { return true }
    // On the queue of the deferred writes, so that two writes never overlap.
    let failure: IdentityError? = saves.sync {
      do throws(IdentityError) {
        try state.write(KnownPeersFile.name, Array(KnownPeersFile.encode(Array(known.withLock { $0.values })).utf8))
        return nil
      } catch {
        return error
      }
    }
    if let failure {
      known.withLock { $0 = result.before }
      throw failure
    }
    return true
  }

  private static func loadKnownPeers(_ state: StateDirectory) throws(IdentityError) -> [PeerID: KnownPeer] {
    guard let contents = try state.read(KnownPeersFile.name, limit: 16 << 20) else { return [:] }
    do {
      let peers = try KnownPeersFile.decode(String(decoding: contents, as: UTF8.self), path: state.full(KnownPeersFile.name))
      return Dictionary(uniqueKeysWithValues: peers.map { ($0.id, $0) })
    } catch {
      throw .knownPeers(error)
    }
  }

  deinit { if lockFD >= 0 { close(lockFD) } }

  private static func loadOrCreate(_ state: StateDirectory) throws(IdentityError) -> (IdentityKeyPair, String?) {
    if let contents = try state.read(keyFileName, secret: true, limit: 64 * 1024) {
      do {
        return (try IdentityKeyFile.decode(String(decoding: contents, as: UTF8.self)), nil)
      } catch {
        throw .damaged(state.full(keyFileName), "\(error)")
      }
    }
    var random = SystemCryptoRandom()
    let keyPair = IdentityKeyPair.generate(using: &random)
    try state.write(keyFileName, Array(IdentityKeyFile.encode(keyPair).utf8))
    var notice: String?
    if let old = try? state.read(version1FileName, limit: 4096) {
      let oldID = String(decoding: old, as: UTF8.self).trimmingWhitespace
      notice =
        "new identity \(keyPair.peerID.hex) replaces \(oldID.isEmpty ? "the old one" : oldID): Nearby's protocol version 2 derives peer ids from keys; peers that knew the old id see a new peer"
      state.remove(version1FileName)
    }
    return (keyPair, notice)
  }
}

/// Why the identity could not be used.
public enum IdentityError: Error, Hashable, Sendable, CustomStringConvertible {
  case inUse(String, owner: String)
  case damaged(String, String)
  case unusable(String, String)
  /// The path is not safe to keep secrets in: `reason` says why, `fix` what to do.
  case unsafe(String, String, fix: String)
  /// Neither `HOME`, `XDG_STATE_HOME` nor `NEARBY_STATE_DIR` is set.
  case noHome
  /// The known-peers file is damaged.
  case knownPeers(KnownPeersError)

  public var description: String {
    switch self {
    case .inUse(let directory, let owner):
      return
        "another nearby process (pid \(owner)) is using the identity in \(directory): give each peer on this machine its own state directory"
    case .damaged(let path, let reason):
      return "the identity key file \(path) cannot be used: \(reason)"
    case .unusable(let path, let reason):
      return "cannot use the state directory \(path): \(reason); choose another state directory"
    case .unsafe(let path, let reason, let fix):
      return "refusing to use \(path): \(reason); \(fix)"
    case .knownPeers(let error):
      return error.description
    case .noHome:
      return
        "there is no state directory: HOME is not set (nor XDG_STATE_HOME or NEARBY_STATE_DIR); set one of them, or give a state directory"
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
