/// Turns DNS-SD instances into peers (PROTOCOL.md section 1.4).
///
/// One peer may be reported by several instances: one per interface and address family, and
/// old and new names after a rename or restart. A peer is its TXT `id`: it is *found* once
/// (when an instance with a valid record and at least one address appears), *updated* when
/// its merged record or endpoints change, and *lost* when its last instance is gone.
package struct PeerDirectory: Sendable {
  /// One DNS-SD instance as the browser reports it.
  package struct InstanceKey: Hashable, Sendable, CustomStringConvertible {
    package var name: String
    package var interfaceIndex: UInt32
    package var domain: String

    package init(name: String, interfaceIndex: UInt32, domain: String = "local.") {
      self.name = name
      self.interfaceIndex = interfaceIndex
      self.domain = domain
    }

    package var description: String { "'\(name)' (interface \(interfaceIndex))" }
  }

  /// What resolving an instance gave.
  package struct Resolution: Hashable, Sendable {
    package var advertisement: PeerAdvertisement
    package var hostName: String
    package var port: UInt16
    /// Numeric addresses of the host.
    package var addresses: [String]

    package init(advertisement: PeerAdvertisement, hostName: String, port: UInt16, addresses: [String]) {
      self.advertisement = advertisement
      self.hostName = hostName
      self.port = port
      self.addresses = addresses
    }
  }

  /// What changed.
  package enum Change: Hashable, Sendable {
    case found(DiscoveredPeer)
    case updated(DiscoveredPeer)
    case lost(Peer)
    /// An instance of the service type that is not a Nearby peer (reported once per name).
    case notANearbyPeer(instance: String, reason: String)
  }

  private var instances: [InstanceKey: Resolution] = [:]
  /// The order instances were last updated in, so the newest record wins.
  private var generation: [InstanceKey: UInt64] = [:]
  private var nextGeneration: UInt64 = 0
  private var reported: [PeerID: DiscoveredPeer] = [:]
  private var reportedInvalid: Set<String> = []
  /// Our own id, never reported unless ``includeOwnPeer`` is set.
  package var localPeer: PeerID?
  package var includeOwnPeer = false

  package init(localPeer: PeerID? = nil, includeOwnPeer: Bool = false) {
    self.localPeer = localPeer
    self.includeOwnPeer = includeOwnPeer
  }

  /// Peers currently reported.
  package var peers: [DiscoveredPeer] { Array(reported.values) }

  /// An instance resolved (again).
  package mutating func resolved(_ key: InstanceKey, _ resolution: Resolution) -> [Change] {
    let previousID = instances[key]?.advertisement.peer.id
    instances[key] = resolution
    generation[key] = nextGeneration
    nextGeneration += 1
    reportedInvalid.remove(key.name)
    var changes = refresh(resolution.advertisement.peer.id)
    if let previousID, previousID != resolution.advertisement.peer.id { changes += refresh(previousID) }
    return changes
  }

  /// An instance's TXT record is not a Nearby peer's.
  package mutating func invalid(_ key: InstanceKey, reason: String) -> [Change] {
    var changes: [Change] = []
    if let previous = instances.removeValue(forKey: key) {
      generation[key] = nil
      changes += refresh(previous.advertisement.peer.id)
    }
    if reportedInvalid.insert(key.name).inserted {
      changes.append(.notANearbyPeer(instance: key.name, reason: reason))
    }
    return changes
  }

  /// The browser reported the instance gone.
  package mutating func removed(_ key: InstanceKey) -> [Change] {
    generation[key] = nil
    // Reported again if it comes back (and names of instances long gone are not kept).
    reportedInvalid.remove(key.name)
    guard let previous = instances.removeValue(forKey: key) else { return [] }
    return refresh(previous.advertisement.peer.id)
  }

  /// Recomputes one peer from its instances and says what changed.
  private mutating func refresh(_ id: PeerID) -> [Change] {
    if id == localPeer && !includeOwnPeer { return [] }
    let mine = instances.filter { $0.value.advertisement.peer.id == id }
    guard !mine.isEmpty else {
      guard let gone = reported.removeValue(forKey: id) else { return [] }
      return [.lost(gone.peer)]
    }
    let newest = mine.max { generation[$0.key, default: 0] < generation[$1.key, default: 0] }!.value
    var endpoints: [Endpoint] = []
    // Each instance's endpoints, IPv4 before IPv6; taken in turns, newest instance first, no
    // duplicates: the first of each instance, then the second of each, ... Anybody can publish
    // an instance with the peer's id and many addresses of other hosts: all of a newer
    // instance first put the peer's own addresses after all of them.
    let ordered = mine.sorted { generation[$0.key, default: 0] > generation[$1.key, default: 0] }
    let perInstance = ordered.map { key, resolution in
      resolution.addresses.sorted { ($0.contains(":") ? 1 : 0, $0) < ($1.contains(":") ? 1 : 0, $1) }.map { address in
        Endpoint(host: address, port: resolution.port, interfaceIndex: address.hasPrefix("fe80:") ? key.interfaceIndex : 0)
      }
    }
    for index in 0..<(perInstance.map(\.count).max() ?? 0) {
      for instance in perInstance where index < instance.count {
        if !endpoints.contains(instance[index]) { endpoints.append(instance[index]) }
      }
    }
    guard !endpoints.isEmpty else {
      // Resolved but no address yet: not usable, so not reported (or lost if it was).
      guard let gone = reported.removeValue(forKey: id) else { return [] }
      return [.lost(gone.peer)]
    }
    let peer = DiscoveredPeer(advertisement: newest.advertisement, hostName: newest.hostName, endpoints: endpoints)
    let previous = reported.updateValue(peer, forKey: id)
    switch previous {
    case nil: return [.found(peer)]
    case let old? where old != peer: return [.updated(peer)]
    default: return []
    }
  }
}
