import CNearbySystem
import NearbyCore
import NearbyCrypto
import NearbySystem
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// Decides whether a connection just accepted is taken, before anything is made for it
/// (loop thread). - Returns: `nil` to take it, or why it is refused: the listener then
/// answers ERROR `busy` with that text, in plaintext, and closes it at once.
package typealias AdmissionCheck = @Sendable (ConnectionID, SocketAddress) -> String?

/// A listening TCP socket on an ephemeral (or given) port, accepting on the event loop.
///
/// By default it listens on IPv6 `::` with `IPV6_V6ONLY` off, which also accepts IPv4; where
/// the host has no IPv6 it falls back to IPv4 `0.0.0.0`.
package final class TCPListener: EventLoopHandler, @unchecked Sendable {
  package let loop: EventLoop
  /// The address bound (with the port the kernel chose).
  package let address: SocketAddress
  private let fd: Int32
  private let sink: TransportSink
  private let nextID: @Sendable () -> ConnectionID
  private let maximumQueuedBytes: Int
  private let limits: ReceiveLimits
  private let admit: AdmissionCheck?
  private let security: ConnectionSecurity
  private let isOpen = Atomic<Bool>(true)
  /// The lowest descriptor number a peer's connection may not have: the process's limit
  /// (RLIMIT_NOFILE) less ``descriptorReserve``, read when the listener starts.
  private let firstReservedDescriptor = TCPListener.firstReservedDescriptor()

  /// Descriptors that connections from peers never take. Peers that open connections until
  /// none is left starve everything else the process must open, and not only its own code:
  /// libdispatch's thread-pool monitor opens files under /proc and stops the process with
  /// SIGILL when it cannot (seen in a test whose process had a limit of 64 descriptors).
  package static let descriptorReserve: Int32 = 32

  private static func firstReservedDescriptor() -> Int32 {
    var limit = rlimit()
    // (Unlimited is the all-ones value, beyond Int32.max too.)
    guard getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_cur < rlim_t(Int32.max) else { return Int32.max }
    return max(Int32(limit.rlim_cur) - descriptorReserve, 0)
  }

  /// Binds and starts accepting.
  /// - Parameters:
  ///   - host: a numeric address to bind, or `nil` for every interface.
  ///   - port: 0 for an ephemeral port.
  ///   - nextID: gives each accepted connection its id.
  ///   - limits: what each connection may read per loop iteration, and the receive budget.
  ///   - admit: asked about each connection as it is accepted (`nil`: all are taken).
  /// - Throws: ``SystemError`` naming the call that failed.
  package static func bind(
    host: String? = nil, port: UInt16 = 0, loop: EventLoop, maximumQueuedBytes: Int = 4 << 20, limits: ReceiveLimits = ReceiveLimits(),
    admit: AdmissionCheck? = nil, security: ConnectionSecurity, nextID: @escaping @Sendable () -> ConnectionID,
    sink: @escaping TransportSink
  ) async throws -> TCPListener {
    let candidates: [String] = host.map { [$0] } ?? ["::", "0.0.0.0"]
    var lastError: any Error = SystemError("bind", errno: EADDRNOTAVAIL)
    for candidate in candidates {
      guard let address = SocketAddress(host: candidate, port: port) else {
        throw SystemError("inet_pton(\(candidate))", errno: EINVAL)
      }
      do {
        let (fd, bound) = try openListeningSocket(address)
        let listener = TCPListener(
          fd: fd, address: bound, loop: loop, maximumQueuedBytes: maximumQueuedBytes, limits: limits, admit: admit, security: security,
          nextID: nextID, sink: sink)
        try await listener.activate()
        return listener
      } catch {
        lastError = error
      }
    }
    throw lastError
  }

  private static func openListeningSocket(_ address: SocketAddress) throws(SystemError) -> (Int32, SocketAddress) {
    let fd = socket(address.family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    guard fd >= 0 else { throw SystemError("socket", errno: errno) }
    var one: Int32 = 1
    var zero: Int32 = 0
    _ = setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
    if address.family == AF_INET6 {
      _ = setsockopt(fd, Int32(IPPROTO_IPV6), IPV6_V6ONLY, &zero, socklen_t(MemoryLayout<Int32>.size))
    }
    let bound = address.withSockaddr { Glibc.bind(fd, $0, $1) }
    guard bound == 0 else {
      let error = SystemError("bind(\(address))", errno: errno)
      Glibc.close(fd)
      throw error
    }
    guard listen(fd, 512) == 0 else {
      let error = SystemError("listen", errno: errno)
      Glibc.close(fd)
      throw error
    }
    var storage = sockaddr_storage()
    var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
    _ = withUnsafeMutablePointer(to: &storage) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
    }
    return (fd, SocketAddress(storage: storage, length: length))
  }

  private init(
    fd: Int32, address: SocketAddress, loop: EventLoop, maximumQueuedBytes: Int, limits: ReceiveLimits, admit: AdmissionCheck?,
    security: ConnectionSecurity, nextID: @escaping @Sendable () -> ConnectionID, sink: @escaping TransportSink
  ) {
    self.limits = limits
    self.admit = admit
    self.security = security
    self.fd = fd
    self.address = address
    self.loop = loop
    self.maximumQueuedBytes = maximumQueuedBytes
    self.nextID = nextID
    self.sink = sink
  }

  private func activate() async throws {
    try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
      let queued = loop.submit(
        .closure { [self] in
          do {
            try loop.register(fd, events: NEARBY_EPOLLIN, handler: self)
            continuation.resume()
          } catch {
            abandon()
            continuation.resume(throwing: error)
          }
        })
      // A loop that is stopping drops work: the continuation would never be resumed.
      if !queued {
        abandon()
        continuation.resume(throwing: SystemError("listen (the session's event loop has stopped)", errno: ECANCELED))
      }
    }
  }

  /// Closes the socket of a listener that never started (once: ``close()`` closes it no more).
  private func abandon() {
    if isOpen.exchange(false, ordering: .acquiringAndReleasing) { Glibc.close(fd) }
  }

  /// The port peers connect to.
  package var port: UInt16 { address.port }

  /// Stops accepting and closes the socket.
  package func close() {
    guard isOpen.exchange(false, ordering: .acquiringAndReleasing) else { return }
    loop.execute { [self] in
      loop.deregister(fd)
      Glibc.close(fd)
    }
  }

  package func handle(events: UInt32) {
    // Accept a bounded number per wakeup so a flood of connections cannot starve the others.
    for _ in 0..<64 {
      var storage = sockaddr_storage()
      var length = UInt32(MemoryLayout<sockaddr_storage>.size)
      let client = nearby_accept(fd, &storage, &length)
      if client < 0 {
        switch errno {
        case EAGAIN, EINTR, ECONNABORTED: return
        case EMFILE, ENFILE:
          // Out of descriptors: nothing to do until some close; the kernel keeps the backlog.
          // The socket stays readable, so watching it now would spin the loop: look again
          // in 100 ms.
          pauseAccepting()
          return
        default: return
        }
      }
      // Descriptors are numbered lowest first: one this high means all below are taken.
      if client >= firstReservedDescriptor {
        refuse(client, "busy: this peer has no descriptors to spare; try again later")
        pauseAccepting()
        return
      }
      let remote = SocketAddress(storage: storage, length: socklen_t(length))
      let id = nextID()
      if let refusal = admit?(id, remote) {
        refuse(client, refusal)
        continue
      }
      let connection = TCPConnection(
        id: id, fd: client, remote: remote, loop: loop, sink: sink, maximumQueuedBytes: maximumQueuedBytes, limits: limits, security: security,
        role: .responder)
      do {
        try connection.activate()
        sink(.accepted(connection))
      } catch {
        Glibc.close(client)
      }
    }
  }

  /// Stops watching the socket for a while (out of descriptors). Loop thread only.
  private func pauseAccepting() {
    guard isOpen.load(ordering: .acquiring) else { return }
    loop.reregister(fd, events: 0)
    loop.schedule(after: .milliseconds(100)) { [self] in
      guard isOpen.load(ordering: .acquiring) else { return }
      loop.reregister(fd, events: NEARBY_EPOLLIN)
    }
  }

  /// Refuses a connection before its handshake: ERROR `busy` in plaintext (it fits in an
  /// empty socket buffer, so the write does not block), then close. Nothing was made for it.
  private func refuse(_ client: Int32, _ message: String) {
    let text = String(decoding: message.utf8.prefix(ProtocolLimits.maximumErrorMessageBytes), as: UTF8.self)
    let frame = FrameEncoder.encode(.error(code: .busy, message: text))
    _ = frame.withUnsafeBytes { Glibc.send(client, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT)) }
    Glibc.close(client)
  }
}
