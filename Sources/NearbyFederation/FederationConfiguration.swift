import Nearby
import NearbyCore

/// How a relay joins the federation (`nearby relay --federate URL,... --site NAME`).
public struct FederationConfiguration: Sendable, Equatable {
  /// The NATS cluster.
  public var nats: NATSSettings
  /// This relay's site, announced with its peers.
  public var site: String
  /// How long a message for an offline peer is kept (the stream's age limit): past it, the
  /// sender hears `expired`.
  public var queueMaximumAge: Duration = .seconds(7 * 86_400)
  /// The most bytes the stream keeps, for every peer together; beyond, new messages are
  /// refused (`storeFailed`).
  public var queueMaximumBytes: Int64 = 1 << 30
  /// A peer whose presence is not refreshed for this long counts as offline (its site is
  /// gone); relays refresh their peers' presence three times as often.
  public var presenceTTL: Duration = .seconds(30)
  /// Copies of the stream and the bucket in the cluster (1 on a single server).
  public var replicas = 3
  /// A message handed to a peer here and not acknowledged is delivered again after this.
  public var acknowledgementWait: Duration = .seconds(30)
  /// A stored message whose origin no presence names is delivered again every 2 s (its
  /// presence may be on its way); once it was stored this long ago it is dropped, with a
  /// warning (so is one whose origin's presence this relay refused, or had no room for).
  /// (Delivered again for ever, 1 024 of them from anyone holding the NATS credentials
  /// filled the peer's consumer, and its real messages waited behind them for the stream's
  /// age limit.)
  public var unknownOriginGiveUp: Duration = .seconds(90)
  /// The stream of messages, receipts and reports, one subject per recipient.
  public var stream = "NEARBY"
  /// The key-value bucket of presence.
  public var presenceBucket = "nearby-presence"
  /// The first tokens of every subject.
  public var subjectPrefix = "nearby.v2"

  public init(nats: NATSSettings, site: String) {
    self.nats = nats
    self.site = site
  }

  /// Where everything for `peer` is published: `nearby.v2.peer.<id>`.
  public func subject(for peer: PeerID) -> String { "\(subjectPrefix).peer.\(peer.hex)" }

  /// Where the consumer of `peer`'s subject delivers to `relay`: `nearby.v2.deliver.<relay>.<peer>`.
  public func deliverSubject(relay: PeerID, peer: PeerID) -> String { "\(subjectPrefix).deliver.\(relay.hex).\(peer.hex)" }

  /// The durable consumer of `peer`'s subject (one at a time, created by the relay it connects to).
  public func consumer(for peer: PeerID) -> String { "peer-\(peer.hex)" }

  /// The stream's settings.
  public var streamSettings: StreamSettings {
    StreamSettings(
      name: stream, subjects: ["\(subjectPrefix).peer.*"], maximumAge: queueMaximumAge, maximumBytes: queueMaximumBytes, replicas: replicas)
  }

  /// A site name people can read in logs and rosters: 1–63 bytes of letters, digits, `-`,
  /// `_` and `.`.
  public static func isValidSite(_ name: String) -> Bool {
    (1...PeerSite.maximumByteCount).contains(name.utf8.count)
      && name.unicodeScalars.allSatisfy {
        $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || "-_.".unicodeScalars.contains($0))
      }
  }
}

extension SessionConfiguration {
  /// Makes the session a relay of `federation`'s site (`nil`: a relay of this LAN only).
  package mutating func federate(_ federation: FederationConfiguration?) {
    self.federation = federation.map { FederationSettings(site: $0.site) }
  }
}
