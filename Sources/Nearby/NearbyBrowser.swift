import NearbyCore
import NearbyDiscovery
import NearbySystem
import NearbyTransport

/// Finds the peers of a service type on the local network, without a session — the
/// counterpart of MultipeerConnectivity's `MCNearbyServiceBrowser`. (A ``NearbySession``
/// browses by itself; this is for programs that only look, like `nearby browse`, or that
/// pick peers before starting a session.)
///
/// ```swift
/// let browser = NearbyBrowser()
/// try await withThrowingTaskGroup(of: Void.self) { group in
///   group.addTask { try await browser.run() }
///   for await case .found(let peer) in browser.events { print(peer.peer.name) }
/// }
/// ```
public final class NearbyBrowser: Sendable {
  /// What a browser reports.
  public enum Event: Hashable, Sendable {
    case found(DiscoveredPeer)
    /// Its name, info or addresses changed.
    case updated(DiscoveredPeer)
    case lost(Peer)
    /// An instance of the service type that is not a Nearby peer (another program's).
    case foreign(instance: String, reason: String)
    /// Browsing failed, typically because avahi-daemon is not running; the browser tries
    /// again by itself every two seconds.
    case failed(String)
    /// More instances were announced than the browser resolves and remembers (`limit`; a
    /// flood of forged ones?): the newest are left out until there is room, then looked for
    /// again. Once per crowding.
    case crowded(limit: Int)
  }

  public let serviceType: ServiceType
  /// Our own peer, whose advertisement is not reported (nil: report every peer).
  public let localPeer: PeerID?
  private let hub = EventHub()

  public init(serviceType: ServiceType = .default, excluding localPeer: PeerID? = nil) {
    self.serviceType = serviceType
    self.localPeer = localPeer
  }

  /// Everything the browser finds, in order.
  public var events: DiscoveryEvents<Event> {
    DiscoveryEvents(hub: hub) { if case .browser(let event) = $0 { event } else { nil } }
  }

  /// Browses until the task is cancelled, then releases everything it made; ``events`` ends.
  /// - Throws: ``SystemError`` when its I/O thread cannot start.
  public func run() async throws {
    let hub = self.hub
    let loop = try hub.startLoop(named: "nearby-browse")
    let browser = Browser(serviceType: serviceType, localPeer: localPeer, loop: loop) { event in
      switch event {
      case .found(let peer): hub.publish(.browser(.found(peer)))
      case .updated(let peer): hub.publish(.browser(.updated(peer)))
      case .lost(let peer): hub.publish(.browser(.lost(peer)))
      case .notANearbyPeer(let instance, let reason): hub.publish(.browser(.foreign(instance: instance, reason: reason)))
      case .failed(let error): hub.publish(.browser(.failed(error.description)))
      case .crowded(let limit): hub.publish(.browser(.crowded(limit: limit)))
      }
    }
    browser.start()
    await waitUntilCancelled()
    browser.finish()
    await loop.shutdown()
    hub.finish()
  }
}

extension EventHub {
  /// The I/O thread of a browser or an advertiser, whose events this hub carries. - Throws:
  /// when it cannot start, after ending the events (their readers waited for ever).
  func startLoop(named name: String) throws(SystemError) -> EventLoop {
    do {
      return try EventLoop(name: name)
    } catch {
      finish()
      throw error
    }
  }
}

/// Suspends until the current task is cancelled.
func waitUntilCancelled() async {
  let gate = Gate()
  await withTaskCancellationHandler {
    await gate.wait()
  } onCancel: {
    gate.open()
  }
}
