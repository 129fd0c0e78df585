import Dispatch
import Nearby
import NearbyCore

#if canImport(Glibc)
  import Glibc
#endif

/// A relay's federation over NATS: the shell of the session state machine's federation
/// route (PROTOCOL.md 9.6).
///
/// - **Presence**: the peers connected here are written to the presence bucket (and
///   rewritten every third of the presence TTL); every entry of the bucket is watched, and
///   each peer it names (whose key owns its id) becomes a peer behind the federation for the
///   session: online at its site, or offline.
/// - **Messages**: what the session publishes for a recipient goes on the recipient's
///   subject in a JetStream work-queue stream. The relay where a peer connects deletes and
///   recreates the peer's consumer, which delivers everything not acknowledged yet, in
///   order; each message is acknowledged once the peer's receipt passes (``FederationLedger``
///   makes the redeliveries exactly once for the peer). Receipts and reports travel the same
///   way, on their origin's subject.
/// - **Expiry**: a message that was not answered within the age limit is reported `expired`
///   to its sender.
///
/// Threads: all of its state lives on one serial dispatch queue; libnats's callbacks and the
/// session's outputs are posted to it; calls that wait for a server run on a second queue
/// (``NATSWorkQueue``). It never blocks the session's loop nor Swift's cooperative pool.
public final class Federation: FederationLink, @unchecked Sendable {
  // Invariant for @unchecked Sendable: every `var` below is read and written on `queue` only.
  public let configuration: FederationConfiguration
  let session: NearbySession
  let relay: PeerID
  let queue = DispatchQueue(label: "nearby-federation")
  let control = NATSWorkQueue(label: "nearby-federation-requests")
  let started = ContinuousClock.now
  /// What it reports, for the relay's log.
  public let events: AsyncStream<FederationEvent>
  let reporter: AsyncStream<FederationEvent>.Continuation

  var connection: NATSConnection?
  var bucket: NATSKeyValue?
  var watch: NATSKeyValueWatch?
  /// The stream and the bucket exist and presence was read once.
  var isReady = false
  var isStopping = false
  var ledger: FederationLedger<String>
  /// Peers connected here.
  var local: [PeerID: LocalPeer] = [:]
  /// Every peer presence names, with when its entry was last written (our clock): at most
  /// ``maximumPresence``.
  var presence: [PeerID: PresenceState] = [:]
  /// The most presence entries a relay takes: as many peers as a relay may know
  /// (`RosterLimits`). A site that wrote more grew every relay's memory, and the relays'
  /// rosters went past what their peers take, which then closed their relay connections.
  static let maximumPresence = RosterLimits().peers
  /// Presence entries refused for the limit (warned about once).
  var presenceRefused = 0
  /// Peers whose presence the session refused, warned about (once each; only peers that
  /// presence still names, so at most ``maximumPresence``).
  var presenceWarned: Set<PeerID> = []
  /// Peers whose consumer is being (re)created, and those to do again after that.
  var binding: Set<PeerID> = []
  var rebind: Set<PeerID> = []
  /// Peers whose presence entry is being written, and how many writes in a row failed.
  var presenceWrites: Set<PeerID> = []
  var presenceFailures: [PeerID: Int] = [:]
  /// Asynchronous publishes waiting for the stream's answer, by their key.
  var pending: [String: PendingPublish] = [:]
  var nextReportKey: UInt64 = 0
  var statistics = FederationStatistics()
  var timer: (any DispatchSourceTimer)?
  var stopped: CheckedContinuation<Void, Never>?
  var hasStopped = false

  struct LocalPeer {
    var peer: Peer
    var publicKey: [UInt8]
    var subscription: NATSSubscription?
    /// Its consumer was (re)created for this relay.
    var isBound = false
    /// The bucket's revision of its entry when we last wrote it.
    var revision: UInt64?
  }

  struct PresenceState {
    var record: PresenceRecord
    var revision: UInt64
    /// When its entry was last written, on our monotonic clock.
    var refreshed: Duration
    /// What the session was last told.
    var announced: PeerSite?
  }

  struct PendingPublish {
    var subject: String
    var data: [UInt8]
    var messageID: String?
    var attempts: Int
    /// A message (not a report): its origin, id and recipient, for `storeFailed`.
    var message: FederationLedger<String>.Key?
  }

  /// The most publishes that may wait for answers; beyond, the stream is not keeping up and
  /// messages are refused at once.
  static let maximumPending = 20_000

  /// - Parameters:
  ///   - session: the relay's session, made with ``SessionConfiguration/federation`` set; the
  ///     federation attaches itself to it (call this before the session runs).
  public init(configuration: FederationConfiguration, session: NearbySession) async {
    self.configuration = configuration
    self.session = session
    self.relay = session.configuration.peer.id
    self.ledger = FederationLedger(limit: configuration.queueMaximumAge)
    (events, reporter) = AsyncStream.makeStream(of: FederationEvent.self, bufferingPolicy: .bufferingNewest(1024))
    await session.attachFederation(self)
  }

  var now: Duration { ContinuousClock.now - started }

  /// Nanoseconds since 1970 on this host's clock (to compare with JetStream's timestamps).
  static var wallClock: Int64 {
    var spec = timespec()
    clock_gettime(CLOCK_REALTIME, &spec)
    return Int64(spec.tv_sec) * 1_000_000_000 + Int64(spec.tv_nsec)
  }

  func report(_ event: FederationEvent) { reporter.yield(event) }

  // MARK: Running

  /// Connects (and keeps reconnecting by itself), sets the stream and the bucket up, and
  /// runs until ``shutdown()`` or cancellation.
  public func run() async {
    await withTaskCancellationHandler {
      await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
        queue.async {
          if self.hasStopped {
            continuation.resume()
            return
          }
          self.stopped = continuation
          self.start()
        }
      }
    } onCancel: {
      self.shutdown()
    }
  }

  /// Says the peers here are offline, stops watching, closes the connection; ``run()`` then
  /// returns. Bounded: with NATS unreachable it gives up after a few seconds. Idempotent.
  public func shutdown() {
    queue.async {
      guard !self.isStopping else { return }
      self.isStopping = true
      self.timer?.cancel()
      self.timer = nil
      let leaving = self.local.values.map { ($0.peer, $0.publicKey, $0.revision) }
      for peer in self.local.values { peer.subscription?.unsubscribe() }
      self.local = [:]
      let bucket = self.bucket
      let watch = self.watch
      let connection = self.connection
      let deadline = ContinuousClock.now + .seconds(3)
      self.control.async {
        if let bucket, connection?.isConnected == true {
          for (peer, key, revision) in leaving where ContinuousClock.now < deadline {
            self.writeOffline(peer, publicKey: key, revision: revision, bucket: bucket)
          }
        }
        watch?.stop()
        connection?.close()
        self.queue.async { self.finish() }
      }
    }
  }

  private func finish() {
    hasStopped = true
    reporter.finish()
    stopped?.resume()
    stopped = nil
  }

  /// Starts connecting (on the request queue: connecting may wait for servers).
  private func start() {
    let settings = configuration.nats
    control.async {
      do throws(NATSError) {
        let connection = try NATSConnection.connect(settings) { [weak self] event in
          guard let self else { return }
          self.queue.async { self.connectionChanged(event) }
        }
        connection.onPublishAnswered { [weak self] result in
          guard let self else { return }
          self.queue.async { self.publishAnswered(result) }
        }
        self.queue.async {
          self.connection = connection
          if self.isStopping {
            self.control.async { connection.close() }
          } else if connection.isConnected {
            self.setUp()
          }
        }
      } catch {
        self.report(.unusable("\(error)"))
        self.queue.async { self.finish() }
      }
    }
    let timer = DispatchSource.makeTimerSource(queue: queue)
    timer.schedule(deadline: .now() + .seconds(1), repeating: .seconds(1))
    timer.setEventHandler { [weak self] in self?.tick() }
    timer.resume()
    self.timer = timer
  }

  private func connectionChanged(_ event: NATSConnectionEvent) {
    report(.nats(event))
    switch event {
    case .connected:
      statistics.isConnected = true
      if connection != nil { setUp() }
    case .reconnected:
      statistics.isConnected = true
      statistics.reconnects += 1
      // Deliveries in flight were lost with the old server: every consumer again, from what
      // is not acknowledged (in order; the ledger skips what is already on its way).
      if isReady {
        for id in local.keys.sorted() {
          writePresence(id)
          bind(id)
        }
      }
    case .disconnected:
      statistics.isConnected = false
    case .closed:
      statistics.isConnected = false
    case .error:
      break
    }
  }

  /// Creates the stream and the bucket (or checks them), then watches presence; tried again
  /// every few seconds until it works.
  func setUp() {
    guard !isReady, !isStopping, let connection else { return }
    let configuration = self.configuration
    control.async {
      do throws(NATSError) {
        let replicas = try connection.ensureStream(configuration.streamSettings)
        let bucket = try NATSKeyValue(
          bucket: configuration.presenceBucket, ttl: configuration.queueMaximumAge, replicas: replicas, on: connection)
        self.queue.async {
          guard !self.isStopping, self.bucket == nil else { return }
          self.bucket = bucket
          self.report(.ready(replicas: replicas))
          self.startWatching(bucket)
        }
      } catch {
        self.report(.setupFailed("\(error)"))
        self.control.after(.seconds(2)) { self.queue.async { self.setUp() } }
      }
    }
  }

  /// Once a second: expiry, presence refresh and staleness.
  private func tick() {
    guard !isStopping else { return }
    expireOverdue()
    refreshPresence()
    statistics.server = connection?.connectedServer
  }

  /// The counters now (for the relay's stats line).
  public func currentStatistics() async -> FederationStatistics {
    await withCheckedContinuation { continuation in
      queue.async {
        var statistics = self.statistics
        statistics.publishesPending = self.pending.count
        statistics.remoteOnline = self.presence.values.filter { $0.announced?.isOnline == true && self.local[$0.record.peer.id] == nil }.count
        statistics.remoteOffline = self.presence.values.filter { $0.announced?.isOnline == false && self.local[$0.record.peer.id] == nil }.count
        continuation.resume(returning: statistics)
      }
    }
  }

  // MARK: What the session hands over (on its loop: post and return)

  package func handle(_ output: FederationOutput) {
    queue.async { self.process(output) }
  }

  private func process(_ output: FederationOutput) {
    switch output {
    case .publish(let message, let recipient, _):
      publish(message, for: recipient)
    case .report(let frame, let origin):
      publishReport(frame, for: origin)
    case .receipted(let recipient, let origin, let ids):
      let tokens = ledger.receipted(recipient: recipient, origin: origin, ids: ids)
      for token in tokens { acknowledge(token) }
    case .arrived(let peer, let publicKey):
      guard !isStopping else { return }
      local[peer.id] = LocalPeer(peer: peer, publicKey: publicKey, revision: presence[peer.id]?.revision)
      writePresence(peer.id)
      if isReady { bind(peer.id) }
    case .departed(let id):
      ledger.departed(id)
      guard let peer = local.removeValue(forKey: id) else { return }
      peer.subscription?.unsubscribe()
      guard let bucket, !isStopping else { return }
      control.async { self.writeOffline(peer.peer, publicKey: peer.publicKey, revision: peer.revision, bucket: bucket) }
    }
  }
}
