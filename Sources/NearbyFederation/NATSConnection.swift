import CNats
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// How to reach a NATS cluster.
public struct NATSSettings: Sendable, Equatable {
  /// `nats://HOST:PORT` (or `tls://`) of one or more servers of the cluster; the client
  /// learns the others from the servers and fails over among all of them.
  public var servers: [String]
  /// The connection's name, shown by the servers' monitoring.
  public var name: String
  /// A `.creds` file (a user JWT and its NKey seed), for servers with decentralized auth.
  public var credentialsFile: String?
  /// The CA certificates (PEM) that sign the servers' certificates: TLS is then required.
  public var trustedCertificatesFile: String?
  /// Pause between two rounds of reconnection attempts.
  public var reconnectWait: Duration = .milliseconds(250)
  /// How long one connection attempt may take.
  public var connectTimeout: Duration = .seconds(2)
  /// A server that answers no ping for two intervals is given up (then the next is tried).
  public var pingInterval: Duration = .seconds(5)
  /// Try the servers in the order given (the nearest first) rather than in a random order.
  public var keepsServerOrder = false

  public init(servers: [String], name: String) {
    self.servers = servers
    self.name = name
  }
}

/// What happens to a connection, as libnats reports it from its own threads.
public enum NATSConnectionEvent: Sendable, Equatable {
  /// Connected (the first time) to this server.
  case connected(String)
  /// The connection to the server broke; libnats tries the others by itself.
  case disconnected
  /// Connected again, to this server.
  case reconnected(String)
  /// Closed for good (by ``NATSConnection/close()``).
  case closed
  /// An asynchronous error: a slow consumer, a permission denied, ...
  case error(String)
}

/// A connection to NATS (libnats's `natsConnection`), with its JetStream context.
///
/// libnats runs its own threads: connection events go to the handler given to
/// ``connect(_:onEvent:)`` and messages of a subscription to its handler, both on libnats's
/// threads, and neither may block. Every method may be called from any thread; those that
/// wait for a server (documented "blocks") must not run on Swift's cooperative pool.
public final class NATSConnection: @unchecked Sendable {
  // Invariant for @unchecked Sendable: the pointers never change after init, and libnats's
  // connection and JetStream context are safe to use from any thread.
  let connection: OpaquePointer
  let jetStream: OpaquePointer
  let hub: NATSCallbackHub
  private let isClosed = Atomic<Bool>(false)

  /// Connects, or starts connecting: when no server answers yet, libnats keeps trying in the
  /// background (`onEvent` hears `connected` once it succeeds), and requests fail meanwhile.
  /// Blocks up to about `connectTimeout` per server (`natsConnection_Connect`).
  /// - Parameters:
  ///   - onEvent: every connection event, in order, on a thread of libnats (must not block);
  ///     `closed` is the last.
  /// - Throws: ``NATSError`` for settings libnats refuses (a bad URL, an unreadable
  ///   credentials or CA file).
  public static func connect(_ settings: NATSSettings, onEvent: @escaping @Sendable (NATSConnectionEvent) -> Void) throws(NATSError)
    -> NATSConnection
  {
    NATSLibrary.open()
    let hub = NATSCallbackHub(onEvent: onEvent)
    var options: OpaquePointer?
    try NATSError.check(natsOptions_Create(&options), "natsOptions_Create")
    defer { natsOptions_Destroy(options) }
    try configure(options!, settings, hub: hub)
    var connection: OpaquePointer?
    let status = natsConnection_Connect(&connection, options)
    guard status == NATS_OK || status == NATS_NOT_YET_CONNECTED, let connection else {
      let error = NATSError("natsConnection_Connect", status)
      hub.release()
      throw error
    }
    if status == NATS_OK { hub.connected(connection) }
    var jetStream: OpaquePointer?
    var jsOptions = jsOptions()
    jsOptions_Init(&jsOptions)
    jsOptions.Wait = 5000
    jsOptions.PublishAsync.AckHandler = publishAcknowledged
    jsOptions.PublishAsync.AckHandlerClosure = hub.pointer
    let made = natsConnection_JetStream(&jetStream, connection, &jsOptions)
    guard made == NATS_OK, let jetStream else {
      let error = NATSError("natsConnection_JetStream", made)
      natsConnection_Close(connection)
      natsConnection_Destroy(connection)
      throw error
    }
    return NATSConnection(connection: connection, jetStream: jetStream, hub: hub)
  }

  /// Checks settings the way ``connect(_:onEvent:)`` applies them (URLs, the credentials and
  /// CA files read and parsed), without connecting: what it throws, connecting would too.
  public static func check(_ settings: NATSSettings) throws(NATSError) {
    NATSLibrary.open()
    let hub = NATSCallbackHub(onEvent: { _ in })
    defer { hub.release() }
    var options: OpaquePointer?
    try NATSError.check(natsOptions_Create(&options), "natsOptions_Create")
    defer { natsOptions_Destroy(options) }
    try configure(options!, settings, hub: hub)
  }

  private init(connection: OpaquePointer, jetStream: OpaquePointer, hub: NATSCallbackHub) {
    self.connection = connection
    self.jetStream = jetStream
    self.hub = hub
  }

  private static func configure(_ options: OpaquePointer, _ settings: NATSSettings, hub: NATSCallbackHub) throws(NATSError) {
    var servers = settings.servers.map { strdup($0) }
    defer { servers.forEach { free($0) } }
    let count = Int32(servers.count)
    let status = servers.withUnsafeMutableBufferPointer { buffer in
      buffer.baseAddress!.withMemoryRebound(to: UnsafePointer<CChar>?.self, capacity: buffer.count) {
        natsOptions_SetServers(options, $0, count)
      }
    }
    try NATSError.check(status, "natsOptions_SetServers")
    try NATSError.check(natsOptions_SetName(options, settings.name), "natsOptions_SetName")
    try NATSError.check(natsOptions_SetNoRandomize(options, settings.keepsServerOrder), "natsOptions_SetNoRandomize")
    try NATSError.check(natsOptions_SetTimeout(options, settings.connectTimeout.milliseconds), "natsOptions_SetTimeout")
    try NATSError.check(natsOptions_SetMaxReconnect(options, -1), "natsOptions_SetMaxReconnect")
    try NATSError.check(natsOptions_SetReconnectWait(options, settings.reconnectWait.milliseconds), "natsOptions_SetReconnectWait")
    try NATSError.check(natsOptions_SetPingInterval(options, settings.pingInterval.milliseconds), "natsOptions_SetPingInterval")
    try NATSError.check(natsOptions_SetMaxPingsOut(options, 2), "natsOptions_SetMaxPingsOut")
    // What is published while reconnecting waits in this buffer (then publishing fails).
    try NATSError.check(natsOptions_SetReconnectBufSize(options, 32 << 20), "natsOptions_SetReconnectBufSize")
    // Messages of all subscriptions are handed out by a small shared pool of threads.
    try NATSError.check(natsOptions_UseGlobalMessageDelivery(options, true), "natsOptions_UseGlobalMessageDelivery")
    if let file = settings.credentialsFile {
      try NATSError.check(natsOptions_SetUserCredentialsFromFiles(options, file, nil), "natsOptions_SetUserCredentialsFromFiles(\(file))")
    }
    if let file = settings.trustedCertificatesFile {
      try NATSError.check(natsOptions_SetSecure(options, true), "natsOptions_SetSecure")
      try NATSError.check(natsOptions_LoadCATrustedCertificates(options, file), "natsOptions_LoadCATrustedCertificates(\(file))")
    }
    let closure = hub.pointer
    try NATSError.check(natsOptions_SetDisconnectedCB(options, disconnected, closure), "natsOptions_SetDisconnectedCB")
    try NATSError.check(natsOptions_SetReconnectedCB(options, reconnected, closure), "natsOptions_SetReconnectedCB")
    try NATSError.check(natsOptions_SetClosedCB(options, closed, closure), "natsOptions_SetClosedCB")
    try NATSError.check(natsOptions_SetErrorHandler(options, asyncError, closure), "natsOptions_SetErrorHandler")
    try NATSError.check(natsOptions_SetRetryOnFailedConnect(options, true, firstConnected, closure), "natsOptions_SetRetryOnFailedConnect")
  }

  /// The server it is connected to, if any (`natsConnection_GetConnectedUrl`).
  public var connectedServer: String? {
    var buffer = [CChar](repeating: 0, count: 256)
    guard natsConnection_GetConnectedUrl(connection, &buffer, buffer.count) == NATS_OK, buffer[0] != 0 else { return nil }
    return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
  }

  /// Whether it is connected now (`natsConnection_Status`).
  public var isConnected: Bool { natsConnection_Status(connection) == NATS_CONN_STATUS_CONNECTED }

  /// Counters of the connection (`natsConnection_GetStats`).
  public var statistics: NATSStatistics {
    var stats: OpaquePointer?
    guard natsStatistics_Create(&stats) == NATS_OK, let stats else { return NATSStatistics() }
    defer { natsStatistics_Destroy(stats) }
    _ = natsConnection_GetStats(connection, stats)
    var result = NATSStatistics()
    _ = natsStatistics_GetCounts(stats, &result.messagesIn, &result.bytesIn, &result.messagesOut, &result.bytesOut, &result.reconnects)
    return result
  }

  /// Publishes on a subject (`natsConnection_Publish`): buffered, it does not wait for the
  /// server. - Throws: ``NATSError`` when the connection is closed or its buffer is full.
  public func publish(_ subject: String, _ data: [UInt8]) throws(NATSError) {
    let status = data.withUnsafeBytes { natsConnection_Publish(connection, subject, $0.baseAddress, Int32($0.count)) }
    try NATSError.check(status, "natsConnection_Publish(\(subject))")
  }

  /// Sends a request and waits for the answer (`natsConnection_Request`). Blocks.
  public func request(_ subject: String, _ data: [UInt8], timeout: Duration) throws(NATSError) -> NATSMessage {
    var reply: OpaquePointer?
    let status = data.withUnsafeBytes {
      natsConnection_Request(&reply, connection, subject, $0.baseAddress, Int32($0.count), timeout.milliseconds)
    }
    try NATSError.check(status, "natsConnection_Request(\(subject))")
    defer { natsMsg_Destroy(reply) }
    return NATSMessage(copying: reply!)
  }

  /// Waits until the server has processed everything sent so far (`natsConnection_FlushTimeout`). Blocks.
  public func flush(timeout: Duration = .seconds(5)) throws(NATSError) {
    try NATSError.check(natsConnection_FlushTimeout(connection, timeout.milliseconds), "natsConnection_FlushTimeout")
  }

  /// Subscribes (`natsConnection_Subscribe`): `handler` gets every message on a thread of
  /// libnats (one at a time, in order); it must not block.
  public func subscribe(_ subject: String, _ handler: @escaping @Sendable (NATSMessage) -> Void) throws(NATSError) -> NATSSubscription {
    try NATSSubscription(connection: self, subject: subject, handler: handler)
  }

  /// Closes the connection (`natsConnection_Close`, then `natsConnection_Destroy`): what was
  /// buffered is flushed first; the last event is `closed`. Idempotent. Blocks briefly.
  public func close() {
    guard !isClosed.exchange(true, ordering: .acquiringAndReleasing) else { return }
    jsCtx_Destroy(jetStream)
    natsConnection_Close(connection)
    natsConnection_Destroy(connection)
  }

  deinit { close() }
}

/// Counters of a NATS connection.
public struct NATSStatistics: Sendable, Equatable {
  public var messagesIn: UInt64 = 0
  public var bytesIn: UInt64 = 0
  public var messagesOut: UInt64 = 0
  public var bytesOut: UInt64 = 0
  public var reconnects: UInt64 = 0
  public init() {}
}

/// libnats's process-wide state, opened once.
enum NATSLibrary {
  private static let opened = Mutex(false)

  static func open() {
    opened.withLock { isOpen in
      guard !isOpen else { return }
      _ = nats_Open(-1)
      // Two threads hand out the messages of every subscription (UseGlobalMessageDelivery).
      _ = nats_SetMessageDeliveryPoolSize(2)
      isOpen = true
    }
  }
}

extension Duration {
  /// Whole milliseconds, for libnats's `int64_t` timeouts.
  var milliseconds: Int64 { components.seconds * 1000 + components.attoseconds / 1_000_000_000_000_000 }
}

// MARK: libnats's callbacks (file-level and non-capturing: the hub comes through the closure)

private func hub(_ closure: UnsafeMutableRawPointer?) -> NATSCallbackHub {
  Unmanaged<NATSCallbackHub>.fromOpaque(closure!).takeUnretainedValue()
}

private let firstConnected: natsConnectionHandler = { connection, closure in hub(closure).connected(connection) }
private let disconnected: natsConnectionHandler = { _, closure in hub(closure).post(.disconnected) }
private let reconnected: natsConnectionHandler = { connection, closure in hub(closure).reconnected(connection) }
private let closed: natsConnectionHandler = { _, closure in
  let owner = hub(closure)
  owner.post(.closed)
  // The last callback of a connection: the hub's reference for libnats goes.
  owner.release()
}
private let asyncError: natsErrHandler = { _, _, status, closure in
  let text = NATSError.lastErrorText()
  hub(closure).post(.error(text.isEmpty ? String(cString: natsStatus_GetText(status)) : text))
}
private let publishAcknowledged: jsPubAckHandler = { _, message, acknowledgement, failure, closure in
  hub(closure).publishAnswered(message, acknowledgement, failure)
}
