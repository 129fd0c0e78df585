import NearbyCore

/// What a relay's federation reports, for its log.
public enum FederationEvent: Sendable, Equatable {
  /// The NATS connection's state changed.
  case nats(NATSConnectionEvent)
  /// The stream and the presence bucket are in place (with this many replicas) and presence
  /// is watched: messages cross sites from now on.
  case ready(replicas: Int)
  /// Setting up the stream or the bucket failed; it is tried again.
  case setupFailed(String)
  /// libnats refused the connection's settings (an unreadable or malformed credentials or CA
  /// file, a bad URL): nothing is tried again, and the federation has stopped.
  case unusable(String)
  /// Where a peer at another site is, as presence says.
  case remotePeer(Peer, PeerSite)
  /// Something went wrong that the relay recovers from (a publish tried again, a refused
  /// presence entry, a dropped delivery).
  case warning(String)
}

/// The counters of a relay's federation, for its stats line.
public struct FederationStatistics: Sendable, Equatable {
  /// Whether the NATS connection is up now.
  public var isConnected = false
  /// The server it is connected to.
  public var server: String?
  public var reconnects: UInt64 = 0
  /// Frames published (messages, receipts and reports) and stored by the stream.
  public var published: UInt64 = 0
  /// Publishes that failed for good (the sender heard `storeFailed`).
  public var publishFailures: UInt64 = 0
  /// Publishes tried again after a timeout or failover.
  public var publishRetries: UInt64 = 0
  /// Publishes waiting for the stream's answer.
  public var publishesPending = 0
  /// Stored messages handed to peers here.
  public var delivered: UInt64 = 0
  /// Deliveries of a message already on its way to its peer (not handed on again).
  public var copiesSkipped: UInt64 = 0
  /// Stored frames acknowledged (their peer took them).
  public var acknowledged: UInt64 = 0
  /// Messages that reached the age limit.
  public var expired: UInt64 = 0
  /// Deliveries dropped for failing their checks.
  public var rejected: UInt64 = 0
  /// Peers at other sites online now, and known peers offline.
  public var remoteOnline = 0
  public var remoteOffline = 0

  public init() {}
}
