import NearbyCore

/// How a ``NearbySession`` runs.
public struct SessionConfiguration: Sendable {
  /// Who we are.
  public var peer: Peer
  public var serviceType: ServiceType = .default
  public var discoveryInfo = DiscoveryInfo()
  public var acceptPolicy: AcceptPolicy = .ask
  /// Peers whose invitations are always accepted.
  public var allowList: Set<PeerID> = []
  /// Publish our advertisement through DNS-SD.
  public var advertise = true
  /// Browse for peers through DNS-SD.
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
  /// After it handled something, the session's I/O thread polls for this long before it
  /// sleeps, so that an answer arriving meanwhile costs no wake-up. Zero (the default): no
  /// polling. Lowers round trips where waking a sleeping thread on another CPU is slow (seen
  /// on small virtual machines: 150 µs round trips on loopback became 20–30 µs with 200 µs);
  /// costs up to that much CPU time after each burst of traffic. At most one fewer loop than
  /// there are CPUs polls at a time in one process.
  public var busyPoll: Duration = .zero
  /// The most bytes queued for one connection before messages to it are refused.
  public var maximumQueuedBytes = 4 << 20
  /// Connected peers beyond which invitations are declined `busy`; `nil`: no limit.
  public var maximumPeers: Int?
  /// Handshaking connections beyond which new ones are refused with ERROR `busy`.
  public var maximumPendingConnections = 64
  /// Invitations waiting for an answer beyond which new ones are declined `busy`.
  public var maximumPendingInvitations = 32
  /// Whether we are a relay (capability bit and TXT `relay=1`).
  public var isRelay = false
  /// Invite every peer found through DNS-SD (a relay's `--connect-found`), with backoff.
  public var connectFound = false

  public init(peer: Peer) { self.peer = peer }
}
