import NearbyCore
import NearbyDiscovery
import NearbyTransport

/// Announces a peer listening on a port, without a session — the counterpart of
/// MultipeerConnectivity's `MCNearbyServiceAdvertiser`. (A ``NearbySession`` advertises
/// itself; this is for a program that accepts connections some other way, or for tests.)
public final class NearbyAdvertiser: Sendable {
  /// What an advertiser reports.
  public enum Event: Hashable, Sendable {
    /// Registered under this instance name (the daemon renames on a conflict).
    case registered(name: String)
    /// Registration failed, typically because avahi-daemon is not running; it tries again by
    /// itself every two seconds.
    case failed(String)
  }

  public let peer: Peer
  public let port: UInt16
  public let serviceType: ServiceType
  public let isRelay: Bool
  private let hub = EventHub()

  /// - Parameters:
  ///   - peer: who to announce: id, name and the discovery info to publish.
  ///   - port: the TCP port it listens on.
  ///   - serviceType: the DNS-SD service type to register under.
  ///   - isRelay: whether to announce a relay (TXT `relay=1`).
  /// - Throws: ``DiscoveryInfoError`` when the TXT record would be too large.
  public init(peer: Peer, port: UInt16, serviceType: ServiceType = .default, isRelay: Bool = false) throws(DiscoveryInfoError) {
    _ = try PeerAdvertisement(peer: peer, isRelay: isRelay, info: peer.info).txtRecord()
    self.peer = peer
    self.port = port
    self.serviceType = serviceType
    self.isRelay = isRelay
  }

  /// What happens to the advertisement, in order.
  public var events: DiscoveryEvents<Event> {
    DiscoveryEvents(hub: hub) { if case .advertiser(let event) = $0 { event } else { nil } }
  }

  /// Advertises until the task is cancelled, then withdraws the advertisement; ``events`` ends.
  /// - Throws: ``SystemError`` when its I/O thread cannot start.
  public func run() async throws {
    let hub = self.hub
    let loop = try hub.startLoop(named: "nearby-advertise")
    let advertisement = PeerAdvertisement(peer: peer, isRelay: isRelay, info: peer.info)
    let advertiser: Advertiser
    do {
      advertiser = try Advertiser(advertisement: advertisement, serviceType: serviceType, port: port, loop: loop) { event in
        switch event {
        case .registered(let name): hub.publish(.advertiser(.registered(name: name)))
        case .failed(let error): hub.publish(.advertiser(.failed(error.description)))
        case .infoUpdated: break
        }
      }
    } catch {
      await loop.shutdown()  // its thread, which nothing else would stop
      hub.finish()
      throw error
    }
    advertiser.start()
    await waitUntilCancelled()
    advertiser.finish()
    await loop.shutdown()
    hub.finish()
  }
}
