import NearbyCore
import NearbyCrypto
import NearbySystem

#if canImport(Glibc)
  import Glibc
#endif

/// A hand-driven protocol version 2 peer on a blocking socket: it runs the real handshake
/// (NearbyCrypto's, as a conforming peer would), then lets a test send whatever frames,
/// records or raw bytes it likes — the tool of the hostile-peer tests and of the benchmark's
/// floods (`nearby bench --only hostile`). Its reads have a timeout, so a test never hangs on it.
package final class SecureTestPeer: @unchecked Sendable {
  package let fd: Int32
  package let identity: IdentityKeyPair
  /// Set once the handshake completed.
  package private(set) var result: HandshakeResult?
  package private(set) var sealer: RecordSealer?
  package private(set) var opener: RecordOpener?
  /// What the handshake left after the last handshake message (the start of the records).
  private var pending: [UInt8] = []
  /// What the handshake announces (set before it): a peer without ``CipherSet/paddedRecords``
  /// plays one built before PADDED records existed.
  package var ciphers = CipherSet.locallySupported
  /// Received record bytes whose record is not complete yet (for ``Received/records``).
  private var partialRecord: [UInt8] = []

  package var peerID: PeerID { identity.peerID }

  /// A fresh identity, or the one a seed gives.
  package static func makeIdentity(seed: UInt8? = nil) -> IdentityKeyPair {
    if let seed { return IdentityKeyPair(seedBytes: [UInt8](repeating: seed, count: 32))! }
    var random = SystemCryptoRandom()
    return .generate(using: &random)
  }

  /// Connects to `127.0.0.1:port` (nothing is sent yet).
  /// - Parameters:
  ///   - receiveBuffer: a small `SO_RCVBUF`, set before connecting so that it bounds the TCP
  ///     window: a peer that then does not read fills its sender's queue quickly.
  ///   - source: the local address to connect from (another loopback address such as
  ///     `127.0.0.2` plays another host).
  package init(
    port: UInt16, identity: IdentityKeyPair = SecureTestPeer.makeIdentity(), receiveBuffer: Int32? = nil, source: String? = nil
  ) throws {
    self.identity = identity
    fd = try LoopbackSocket.connected(to: port, receiveBuffer: receiveBuffer, source: source)
    setReceiveTimeout(seconds: 8)
  }

  /// Wraps a socket accepted by a test's own listener (for the responder side).
  package init(acceptedFD: Int32, identity: IdentityKeyPair = SecureTestPeer.makeIdentity()) {
    self.identity = identity
    fd = acceptedFD
    setReceiveTimeout(seconds: 8)
  }

  deinit { close(fd) }

  package func setReceiveTimeout(seconds: Int) {
    var timeout = timeval(tv_sec: seconds, tv_usec: 0)
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
  }

  /// The HELLO payload a Nearby peer carries in its handshake.
  package static func helloPayload(_ hello: Frame.Hello) -> [UInt8] { FrameEncoder.encode(.hello(hello)) }

  /// The HELLO of this peer under `name` (protocol version 2).
  package func hello(name: String, capabilities: Capabilities = []) -> Frame.Hello {
    Frame.Hello(minVersion: 2, maxVersion: 2, capabilities: capabilities, peer: Peer(id: peerID, name: try! DisplayName(name)))
  }

  /// Runs the handshake to completion (blocking, off the cooperative pool when called from
  /// ``handshakeInBackground(role:payload:)``).
  /// - Throws: ``SecureTestPeerError`` naming the handshake's error, or a timeout.
  package func handshake(role: Handshake.Role = .initiator(expecting: nil), payload: [UInt8]) throws {
    var random = SystemCryptoRandom()
    var handshake = Handshake(role: role, identity: identity, payload: payload, ciphers: ciphers, random: &random)
    writeRaw(handshake.start().send)
    var buffer = [UInt8](repeating: 0, count: 16_384)
    while true {
      let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
      if count <= 0 {
        throw SecureTestPeerError("the connection \(count == 0 ? "closed" : "timed out") during the handshake (state \(handshake.state))")
      }
      let output = handshake.receive(buffer[0..<count])
      writeRaw(output.send)
      if let error = output.error { throw SecureTestPeerError("handshake failed: \(error)") }
      if let result = output.result {
        self.result = result
        sealer = result.makeSealer()
        opener = result.makeOpener()
        pending = output.remainingBytes
        return
      }
    }
  }

  /// ``handshake(role:payload:)`` on a thread of its own.
  package func handshakeInBackground(role: Handshake.Role = .initiator(expecting: nil), payload: [UInt8]) async throws {
    try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
      DetachedThread.run { [self] in
        do {
          try handshake(role: role, payload: payload)
          continuation.resume()
        } catch {
          continuation.resume(throwing: error)
        }
      }
    }
  }

  // MARK: Sending

  /// Bytes as they are (no record).
  package func writeRaw(_ bytes: [UInt8]) {
    guard !bytes.isEmpty else { return }
    var offset = 0
    while offset < bytes.count {
      let sent = bytes.withUnsafeBytes { send(fd, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL)) }
      if sent <= 0 { return }
      offset += sent
    }
  }

  /// Frames, sealed in one record stream write.
  package func write(_ frames: Frame...) { write(frames) }

  package func write(_ frames: [Frame]) {
    var plaintext: [UInt8] = []
    for frame in frames { FrameEncoder.encode(frame, into: &plaintext) }
    writeSealed(plaintext)
  }

  /// Any plaintext, sealed into records.
  package func writeSealed(_ plaintext: [UInt8]) {
    var sealed: [UInt8] = []
    sealer!.seal(plaintext, into: &sealed)
    writeRaw(sealed)
  }

  /// The bytes of one sealed record of `plaintext`, without sending them (to tamper with,
  /// replay or reorder).
  package func sealedRecord(_ plaintext: [UInt8]) -> [UInt8] {
    var sealed: [UInt8] = []
    sealer!.seal(plaintext, into: &sealed)
    return sealed
  }

  /// The CLOSE record, then the end of our direction.
  package func finish() {
    var bytes: [UInt8] = []
    sealer?.close(into: &bytes)
    writeRaw(bytes)
    shutdown(fd, Int32(SHUT_WR))
  }

  package func shutdownWrite() { shutdown(fd, Int32(SHUT_WR)) }

  // MARK: Receiving

  /// What the peer sent until it closed (or the read timed out): the frames opened from its
  /// records, whether it closed, and the record or frame error that stopped reading.
  package struct Received: Sendable {
    package var frames: [Frame] = []
    package var closed = false
    package var closeRecord = false
    package var error: String?
    /// The type byte and `length` of each whole record received (RECORD, PADDED, CLOSE), in order.
    package var records: [(type: UInt8, length: Int)] = []
  }

  /// Notes the records that `bytes` (the stream after the handshake) completes.
  private func noteRecords(_ bytes: [UInt8], into received: inout Received) {
    partialRecord += bytes
    var start = 0
    while partialRecord.count - start >= 5 {
      let length = partialRecord[start..<start + 4].reduce(0) { $0 << 8 | Int($1) }
      guard partialRecord.count - start >= 4 + length else { break }
      received.records.append((partialRecord[start + 4], length))
      start += 4 + length
    }
    partialRecord.removeFirst(start)
  }

  /// Reads until the peer closes (an end of stream, or a reset), a read times out, `stop`
  /// says so, or an error.
  package func read(until stop: @Sendable ([Frame]) -> Bool = { _ in false }) -> Received {
    var received = Received()
    let decoder = FrameDecoder()
    var buffer = [UInt8](repeating: 0, count: 65_536)
    var input = pending
    pending = []
    while true {
      if let opener {
        noteRecords(input, into: &received)
        opener.append(input)
        do {
          while let plaintext = try opener.next() { decoder.append(plaintext) }
          while let frame = try decoder.next() { received.frames.append(frame) }
        } catch {
          received.error = "\(error)"
          return received
        }
        received.closeRecord = opener.isClosed
      } else {
        decoder.append(input)
        while let frame = try? decoder.next() { received.frames.append(frame) }
      }
      if stop(received.frames) { return received }
      let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
      if count == 0 {
        received.closed = true
        return received
      }
      if count < 0 {
        // A reset is the peer closing too, abortively: it closed with our bytes still unread
        // (a relay whose linger ended while we were still flooding it, on a loaded machine).
        if errno == ECONNRESET { received.closed = true }
        return received
      }
      input = Array(buffer[0..<count])
    }
  }

  /// ``read(until:)`` on a thread of its own.
  /// Runs blocking work (writes that may wait for the peer to read) on a thread of its own,
  /// never on the cooperative pool.
  package func inBackground(_ work: @escaping @Sendable (SecureTestPeer) -> Void) async {
    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
      DetachedThread.run { [self] in
        work(self)
        continuation.resume()
      }
    }
  }

  package func readInBackground(until stop: @escaping @Sendable ([Frame]) -> Bool = { _ in false }) async -> Received {
    await withCheckedContinuation { continuation in
      DetachedThread.run { [self] in continuation.resume(returning: read(until: stop)) }
    }
  }
}

package struct SecureTestPeerError: Error, CustomStringConvertible {
  package let description: String
  package init(_ description: String) { self.description = description }
}
