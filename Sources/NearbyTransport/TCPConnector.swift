import CNearbySystem
import NearbyCore
import NearbyCrypto
import NearbySystem

#if canImport(Glibc)
  import Glibc
#endif

/// Opens an outbound connection, trying each endpoint in turn with a timeout per endpoint,
/// and reports ``TransportEvent/connected(_:)`` or ``TransportEvent/connectFailed(_:_:)``.
///
/// While other endpoints remain, an endpoint counts only once its handshake authenticated
/// the peer: one that accepts the connection but fails the handshake (another peer's key
/// answers: a forged DNS-SD record pointing elsewhere; no Nearby peer; no answer within the
/// timeout) is given up quietly and the next is tried, and the connection is reported
/// (`connected`, then `authenticated`) only once one succeeds. The last endpoint is reported
/// as soon as TCP connects, and its handshake's outcome reaches the owner as before.
package final class TCPConnector: EventLoopHandler, @unchecked Sendable {
  private let id: ConnectionID
  private let loop: EventLoop
  private let sink: TransportSink
  private let timeout: Duration
  private let maximumQueuedBytes: Int
  private let limits: ReceiveLimits
  private let security: ConnectionSecurity
  private let expected: PeerID?
  private var remaining: [Endpoint]
  private var failures: [String] = []
  private var fd: Int32 = -1
  private var current: SocketAddress?
  private var timer: UInt64?
  private var cancelled = false
  /// The connection whose handshake runs before it is reported (endpoints remained), and
  /// the number of the attempt it belongs to (events of an attempt given up are ignored).
  private var handshaking: TCPConnection?
  private var attempt = 0

  /// Starts connecting on the loop.
  /// - Parameters:
  ///   - security: our identity and handshake payload.
  ///   - expected: the peer we mean to reach, when known: the handshake fails unless the
  ///     key that answers owns this id.
  package static func connect(
    _ id: ConnectionID, to endpoints: [Endpoint], loop: EventLoop, timeout: Duration = .seconds(5), maximumQueuedBytes: Int = 4 << 20,
    limits: ReceiveLimits = ReceiveLimits(), security: ConnectionSecurity, expecting expected: PeerID? = nil, sink: @escaping TransportSink
  ) -> TCPConnector {
    let connector = TCPConnector(
      id: id, endpoints: endpoints, loop: loop, timeout: timeout, maximumQueuedBytes: maximumQueuedBytes, limits: limits, security: security,
      expected: expected, sink: sink)
    loop.execute { connector.next() }
    return connector
  }

  private init(
    id: ConnectionID, endpoints: [Endpoint], loop: EventLoop, timeout: Duration, maximumQueuedBytes: Int, limits: ReceiveLimits,
    security: ConnectionSecurity, expected: PeerID?, sink: @escaping TransportSink
  ) {
    self.limits = limits
    self.id = id
    self.remaining = endpoints
    self.loop = loop
    self.timeout = timeout
    self.maximumQueuedBytes = maximumQueuedBytes
    self.security = security
    self.expected = expected
    self.sink = sink
  }

  /// Gives up quietly (no event is reported).
  package func cancel() {
    loop.execute { [self] in
      cancelled = true
      abandonCurrent()
    }
  }

  private func next() {
    guard !cancelled else { return }
    guard !remaining.isEmpty else {
      let detail = failures.isEmpty ? "no address to connect to" : failures.joined(separator: "; ")
      sink(.connectFailed(id, detail))
      return
    }
    let endpoint = remaining.removeFirst()
    guard let address = SocketAddress(endpoint) else {
      failures.append("\(endpoint): not a numeric address")
      next()
      return
    }
    current = address
    fd = socket(address.family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    guard fd >= 0 else {
      failures.append("\(endpoint): \(SystemError("socket", errno: errno))")
      next()
      return
    }
    var result: Int32
    repeat {
      result = address.withSockaddr { Glibc.connect(fd, $0, $1) }
    } while result < 0 && errno == EINTR
    if result == 0 {
      established()
      return
    }
    guard errno == EINPROGRESS else {
      failures.append("\(endpoint): \(SystemError("connect", errno: errno))")
      Glibc.close(fd)
      fd = -1
      next()
      return
    }
    do {
      try loop.register(fd, events: NEARBY_EPOLLOUT, handler: self)
    } catch {
      failures.append("\(endpoint): \(error)")
      Glibc.close(fd)
      fd = -1
      next()
      return
    }
    timer = loop.schedule(after: timeout) { [self] in
      timer = nil
      failures.append("\(endpoint): no answer within \(timeout.formattedSeconds)")
      abandonCurrent()
      next()
    }
  }

  package func handle(events: UInt32) {
    guard fd >= 0, let current else { return }
    var error: Int32 = 0
    var length = socklen_t(MemoryLayout<Int32>.size)
    _ = getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length)
    loop.deregister(fd)
    if let timer { loop.cancelTimer(timer) }
    timer = nil
    if error == 0 {
      established()
    } else {
      failures.append("\(current.endpoint): \(SystemError("connect", errno: error))")
      Glibc.close(fd)
      fd = -1
      next()
    }
  }

  private func established() {
    let endpoint = current!.endpoint
    attempt += 1
    let deferred = !remaining.isEmpty
    let number = attempt
    var connectionSink = sink
    if deferred {
      connectionSink = { [weak self] event in self?.duringHandshake(event, attempt: number, endpoint: endpoint) }
    }
    let connection = TCPConnection(
      id: id, fd: fd, remote: current!, loop: loop, sink: connectionSink, maximumQueuedBytes: maximumQueuedBytes, limits: limits,
      security: security, role: .initiator(expecting: expected))
    fd = -1
    do {
      try connection.activate()
    } catch {
      connection.close(.now)
      failures.append("\(endpoint): \(error)")
      next()
      return
    }
    guard deferred else {
      sink(.connected(connection))
      return
    }
    handshaking = connection
    timer = loop.schedule(after: timeout) { [self] in
      timer = nil
      failures.append("\(endpoint): accepted the connection but did not complete the handshake within \(timeout.formattedSeconds)")
      abandonCurrent()
      next()
    }
  }

  /// An event of a connection whose handshake runs while other endpoints remain.
  private func duringHandshake(_ event: TransportEvent, attempt number: Int, endpoint: Endpoint) {
    guard number == attempt, let connection = handshaking else { return }
    switch event {
    case .authenticated:
      if let timer { loop.cancelTimer(timer) }
      timer = nil
      handshaking = nil
      // From now on its events go straight to the owner.
      connection.sink = sink
      sink(.connected(connection))
      sink(event)
    case .securityFailed(_, let failure):
      failures.append("\(endpoint): \(failure.description)")
      abandonCurrent()
      next()
    case .closed(_, let detail):
      failures.append("\(endpoint): the connection closed during the handshake\(detail.isEmpty ? "" : " (\(detail))")")
      abandonCurrent()
      next()
    default:
      // Nothing else comes before the handshake completes (frames need records), but a
      // write may report the queue writable: nobody waits for that yet.
      break
    }
  }

  /// Gives up the endpoint being tried: its connect, or its connection's handshake.
  private func abandonCurrent() {
    if let timer { loop.cancelTimer(timer) }
    timer = nil
    if let connection = handshaking {
      handshaking = nil
      attempt += 1
      connection.close(.now)
    }
    guard fd >= 0 else { return }
    loop.deregister(fd)
    Glibc.close(fd)
    fd = -1
  }
}
