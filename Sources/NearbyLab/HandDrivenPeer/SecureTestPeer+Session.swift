import NearbyCore
import NearbyCrypto
import NearbySystem
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// What the hostile-peer tests do with a ``SecureTestPeer`` once it is a peer like any other.
extension SecureTestPeer {
  /// Runs the handshake as `name` (with `capabilities`: `.relay` to pose as a relay),
  /// invites, and waits for the ACCEPT (the other side accepts every invitation), all on a
  /// thread of its own.
  /// - Throws: ``SecureTestPeerError`` when the handshake fails or no ACCEPT comes.
  package func joinSession(name: String, capabilities: Capabilities = []) async throws {
    // Handshake, INVITE and reading on one thread of its own: from the task that called this,
    // on a loaded thread pool, the INVITE once left more than a short dead-peer timeout
    // after the handshake, and the session closed the silent connection first.
    let joined: Result<Void, any Error> = await withCheckedContinuation { continuation in
      DetachedThread.run { [self] in
        continuation.resume(returning: Result { try joinSessionBlocking(name: name, capabilities: capabilities) })
      }
    }
    try joined.get()
  }

  /// ``joinSession(name:capabilities:)`` on the calling thread (blocking): for a thread that
  /// goes on sending at once, with no hop through the thread pool in between.
  package func joinSessionBlocking(name: String, capabilities: Capabilities = []) throws {
    try handshake(payload: SecureTestPeer.helloPayload(hello(name: name, capabilities: capabilities)))
    write(.invite(Frame.Invite(invitationID: 1, timeoutMilliseconds: 30_000, context: [])))
    let received = read { frames in frames.contains { if case .accept = $0 { true } else { false } } }
    guard received.frames.contains(where: { if case .accept = $0 { true } else { false } }) else {
      throw SecureTestPeerError("no ACCEPT: \(received.frames), closed \(received.closed), \(received.error ?? "-")")
    }
  }

  /// `count` made-up peers for ROSTER floods: 32-byte keys (`seed`, then the index) and the
  /// ids they own, so every entry passes the key check (no signature is ever checked against
  /// a roster key, so they need not be curve points).
  package static func madeUpRosterEntries(_ count: Int, seed: UInt8 = 0) -> [Frame.Roster.Entry] {
    (0..<count).map { index in
      var key = [UInt8](repeating: seed, count: 32)
      withUnsafeBytes(of: UInt32(index).bigEndian) { key.replaceSubrange(0..<4, with: $0) }
      let id = IdentityPublicKey(bytes: key)!.peerID
      return Frame.Roster.Entry(peer: Peer(id: id, name: try! DisplayName("fake-\(index)")), hops: 1, publicKey: key)
    }
  }

  /// The start of a MESSAGE frame announcing `length` bytes (type and payload), of which
  /// `count` bytes (after the header) are sent, sealed in records of up to 64 KiB. Blocking;
  /// it stops early if the connection fails.
  package func sendPartialFrame(length: Int, count: Int) {
    var header: [UInt8] = []
    withUnsafeBytes(of: UInt32(length).bigEndian) { header.append(contentsOf: $0) }
    header.append(FrameType.message.rawValue)
    writeSealed(header)
    sendSealed(Self.filler(count))
  }

  /// Plaintext sealed in records of up to 64 KiB, written as it is sealed. Blocking.
  /// - Returns: `false` when the connection failed first.
  @discardableResult
  package func sendSealed(_ plaintext: [UInt8]) -> Bool {
    // One output buffer for every record (debug builds are slow at growing arrays).
    var sealed = [UInt8](repeating: 0, count: sealer!.sealedCount(of: 65_536))
    return plaintext.withUnsafeBytes { input in
      var offset = 0
      while offset < input.count {
        let end = min(input.count, offset + 65_536)
        let count = sealed.withUnsafeMutableBytes { sealer!.seal(UnsafeRawBufferPointer(rebasing: input[offset..<end]), into: $0) }
        let sent = sealed.withUnsafeBytes { writeAll(UnsafeRawBufferPointer(rebasing: $0[0..<count])) }
        guard sent else { return false }
        offset = end
      }
      return true
    }
  }

  /// Writes everything. - Returns: `false` when the connection failed first.
  @discardableResult
  package func writeAll(_ bytes: UnsafeRawBufferPointer) -> Bool {
    var offset = 0
    while offset < bytes.count {
      let sent = send(fd, bytes.baseAddress! + offset, bytes.count - offset, Int32(MSG_NOSIGNAL))
      if sent <= 0 { return false }
      offset += sent
    }
    return true
  }

  /// `count` bytes of `a`, made once per size (debug builds are slow at filling arrays).
  private static func filler(_ count: Int) -> [UInt8] {
    fillers.withLock { cache in
      if let made = cache[count] { return made }
      let made = [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
        memset(buffer.baseAddress!, 0x61, count)
        initialized = count
      }
      cache[count] = made
      return made
    }
  }
  private static let fillers = Mutex<[Int: [UInt8]]>([:])

  /// The ERROR codes among `frames`.
  package static func errorCodes(_ frames: [Frame]) -> [ErrorCode] {
    frames.compactMap { if case .error(let code, _) = $0 { code } else { nil } }
  }
}
