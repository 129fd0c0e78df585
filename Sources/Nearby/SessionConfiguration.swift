import NearbyCore

/// How a ``NearbySession`` runs: who we are, how we answer invitations, and its limits.
public struct SessionConfiguration: Sendable {
  /// Who we are: the id (from ``identity``) and the display name people see.
  public internal(set) var peer: Peer
  public var serviceType: ServiceType = .default
  /// Published in the TXT record; peers see it as `Peer.info`.
  public var discoveryInfo = DiscoveryInfo()
  public var acceptPolicy: AcceptPolicy = .ask
  /// Peers whose invitations are always accepted.
  public var allowList: Set<PeerID> = []
  /// Publish our advertisement through DNS-SD.
  public var advertise = true
  /// Browse for peers through DNS-SD (`SessionEvent.found(_:)` and friends).
  public var browse = true
  /// Report our own advertisement as a peer (for diagnostics).
  public var includeOwnAdvertisement = false
  /// A numeric address to listen on; `nil` listens on every interface (IPv6 and IPv4).
  public var listenHost: String?
  /// 0: an ephemeral port.
  public var listenPort: UInt16 = 0
  public var timeouts = ConnectionTimeouts()
  /// The timeout of our invitations unless a call gives one.
  public var invitationTimeout: Duration = .seconds(30)
  /// Adaptive busy polling: after it handled something, the session's I/O thread polls up
  /// to this long before it sleeps, so that an answer arriving meanwhile costs no wake-up —
  /// but only while its recent events came within that time of its starting to wait (a
  /// conversation of requests and answers); otherwise it sleeps at once, so a chat between
  /// people, or an idle session, never polls. While it polls it yields its CPU to any other
  /// thread that wants it. At most one fewer loop than there are CPUs polls at a time in one
  /// process, and a session made on a thread that may run on one CPU only (`taskset -c 0`)
  /// never polls.
  ///
  /// Why it is on by default: waking a thread that sleeps on another CPU costs tens of
  /// microseconds on small virtual machines, more than a whole round trip on loopback. On
  /// the 2-vCPU machine of the README's table, round trips of 64 B requests and answers took
  /// 21.6 and 23.7 µs with 200 µs against 86.3 and 83.6 µs without (two runs of
  /// `nearby bench --only latency`), and the process spent less CPU time per round trip,
  /// not more (49.6 and 53.7 µs against 75.0 and 75.7 µs): the wake-ups cost more than the
  /// polling. The price is a busy CPU while a peer answers just under the window apart (one
  /// every 150 µs keeps a thread polling all the time). Zero: never poll.
  public var busyPoll: Duration = .microseconds(200)
  /// The most bytes queued for one connection; ``NearbySession/send(_:to:)`` waits beyond.
  public var maximumQueuedBytes = 4 << 20
  /// Received messages from one connection that the application has not taken yet: beyond
  /// this many bytes (or ``maximumUntakenMessages``) the session stops reading the
  /// connection until the application catches up, and TCP slows the sender down.
  public var maximumUntakenBytes = 4 << 20
  /// See ``maximumUntakenBytes``.
  public var maximumUntakenMessages = 4096
  /// Received messages not taken yet from all connections together: beyond this many bytes,
  /// each connection that delivers one more is not read until the total is down to half
  /// (so that many peers cannot each fill ``maximumUntakenBytes``).
  public var maximumUntakenBytesInAll = 64 << 20
  /// Connected peers beyond which invitations are declined `busy`; `nil`: no limit.
  public var maximumPeers: Int?
  /// Handshaking connections beyond which new ones are refused with ERROR `busy`.
  public var maximumPendingConnections = 64
  /// Connections from one remote address (an IPv6 address: its /64) that have not reached
  /// `connected` (handshaking, or waiting to be invited), beyond which more from that address
  /// are refused with ERROR `busy` at once, before their handshake: one host cannot take
  /// every slot of ``maximumPendingConnections``.
  public var maximumPendingConnectionsPerSource = 16
  /// The memory all connections together may hold in frames (and records) that have not
  /// arrived completely: a frame is kept until its last byte, and may be 2 MiB. Above it,
  /// the connections holding the most are closed with ERROR `resourceExhausted`. At least
  /// one largest frame (about 2.2 MiB).
  public var maximumPartialFrameBytes = 64 << 20
  /// The most bytes the I/O thread reads from one connection before it turns to the others
  /// (per loop iteration): one busy peer cannot delay another's heartbeat.
  public var receiveBytesPerTurn = 1 << 20
  /// The most frames one connection hands the session per loop iteration (see
  /// ``receiveBytesPerTurn``). A ROSTER counts one frame per 4 of its entries: each entry
  /// costs a check of its key, so a relay takes one large roster per iteration.
  public var receiveFramesPerTurn = 1024
  /// Invitations waiting for an answer beyond which new ones are declined `busy`.
  public var maximumPendingInvitations = 32
  /// Whether we are a relay: we forward messages between our peers and tell them whom we
  /// reach (capability bit and TXT `relay=1`).
  public var isRelay = false
  /// Invite every peer found through DNS-SD (a relay's `--connect-found`), with backoff.
  public var connectFound = false
  /// How long a session whose connection was lost without a goodbye waits to resume before
  /// its peer is reported disconnected and the messages still waiting for it fail. Meanwhile
  /// the side that opened the connection dials the peer again (`SessionEvent.reconnecting`),
  /// and the session resumes without a new invitation (`SessionEvent.reconnected`): what
  /// either side had not received is sent again, nothing twice. Zero: sessions end when
  /// their connection does.
  public var reconnectGrace: Duration = .seconds(30)
  /// The most bytes of our messages kept for one peer until it acknowledges them (to resend
  /// them after a reconnection); ``NearbySession/send(_:to:)`` waits beyond.
  public var resendWindowBytes = 16 << 20
  /// How offers of files are answered (``FileAcceptPolicy``); `ask` reports each as
  /// `TransferEvent.offer(_:)`.
  public var acceptFiles = FileAcceptPolicy.ask
  /// Where files accepted by policy (or with `IncomingOffer.accept()`) go; `nil`: only
  /// `IncomingOffer.accept(into:)` with a folder accepts.
  public var downloadsDirectory: String?
  /// Bytes per second our file transfers may send, all together; `nil`: as fast as the
  /// network and the receivers go.
  public var maximumFileRate: UInt64?
  /// Chunk size, windows and budgets of file transfers (tests and benchmarks change them).
  package var transferTuning = TransferTuning()
  /// What rosters of relay connections may name, and how many peers the session keeps in
  /// all (tests make them small).
  package var rosterLimits = RosterLimits()
  /// A relay that federates sites (`nearby relay --federate ... --site NAME`): its site.
  /// The federation itself is attached with ``NearbySession/attachFederation(_:)``.
  package var federation: FederationSettings?

  /// - Parameters:
  ///   - identity: who we are (``PeerIdentity/init(directory:)`` or ``PeerIdentity/ephemeral()``).
  ///   - name: the display name people see.
  public init(identity: PeerIdentity, name: DisplayName) {
    self.identity = identity
    self.peer = Peer(id: identity.peerID, name: name)
  }

  /// Who we are: the key every handshake proves, and the state directory (when it has one)
  /// where known peers are kept.
  public let identity: PeerIdentity
}
