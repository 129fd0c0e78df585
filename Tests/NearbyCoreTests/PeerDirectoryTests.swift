import NearbyCore
import Testing

@Suite("Peer directory: instances to peers")
struct PeerDirectoryTests {
  typealias Key = PeerDirectory.InstanceKey

  func resolution(_ peer: Peer, port: UInt16 = 5000, addresses: [String] = ["192.0.2.1"], info: [String] = []) -> PeerDirectory.Resolution {
    PeerDirectory.Resolution(
      advertisement: PeerAdvertisement(peer: peer, info: try! DiscoveryInfo(arguments: info)), hostName: "\(peer.name).local.", port: port,
      addresses: addresses)
  }

  func kinds(_ changes: [PeerDirectory.Change]) -> [String] {
    changes.map {
      switch $0 {
      case .found: "found"
      case .updated: "updated"
      case .lost: "lost"
      case .notANearbyPeer: "invalid"
      }
    }
  }

  @Test func onePeerOnSeveralInterfacesIsFoundOnceAndLostWithItsLastInstance() {
    var directory = PeerDirectory()
    let eth = Key(name: "bob", interfaceIndex: 2)
    let wifi = Key(name: "bob", interfaceIndex: 3)
    #expect(kinds(directory.resolved(eth, resolution(Fixture.bob))) == ["found"])
    #expect(kinds(directory.resolved(wifi, resolution(Fixture.bob, addresses: ["198.51.100.7"]))) == ["updated"])
    #expect(directory.peers.first?.endpoints.count == 2)
    #expect(kinds(directory.removed(eth)) == ["updated"])
    #expect(kinds(directory.removed(wifi)) == ["lost"])
    #expect(kinds(directory.removed(wifi)).isEmpty)
  }

  @Test func aRenamedOrRestartedPeerIsAnUpdateNotADuplicate() {
    var directory = PeerDirectory()
    #expect(kinds(directory.resolved(Key(name: "bob", interfaceIndex: 1), resolution(Fixture.bob, port: 5000))) == ["found"])
    // Restarted on a new port under a renamed instance; the old instance lingers a moment.
    let changes = directory.resolved(Key(name: "bob #2", interfaceIndex: 1), resolution(Fixture.bob, port: 6000))
    #expect(kinds(changes) == ["updated"])
    guard case .updated(let peer) = changes[0] else { return }
    #expect(peer.endpoints.first?.port == 6000)
    #expect(kinds(directory.removed(Key(name: "bob", interfaceIndex: 1))) == ["updated"])
    #expect(directory.peers.count == 1)
  }

  @Test func twoPeersWithOneNameAreTwoPeers() {
    var directory = PeerDirectory()
    let other = Peer(id: PeerID(hex: "ffff0000000000000000000000000001")!, name: Fixture.bob.name)
    #expect(kinds(directory.resolved(Key(name: "bob", interfaceIndex: 1), resolution(Fixture.bob))) == ["found"])
    #expect(kinds(directory.resolved(Key(name: "bob #2", interfaceIndex: 1), resolution(other))) == ["found"])
    #expect(directory.peers.count == 2)
  }

  @Test func ownAdvertisementIsHiddenUnlessAsked() {
    var directory = PeerDirectory(localPeer: Fixture.aliceID)
    #expect(directory.resolved(Key(name: "alice", interfaceIndex: 1), resolution(Fixture.alice)).isEmpty)
    var including = PeerDirectory(localPeer: Fixture.aliceID, includeOwnPeer: true)
    #expect(kinds(including.resolved(Key(name: "alice", interfaceIndex: 1), resolution(Fixture.alice))) == ["found"])
  }

  @Test func foreignInstancesAreReportedOnceAndNeverBreakAnything() {
    var directory = PeerDirectory()
    let key = Key(name: "printer", interfaceIndex: 1)
    #expect(kinds(directory.invalid(key, reason: "no id")) == ["invalid"])
    #expect(directory.invalid(key, reason: "no id").isEmpty)
    #expect(kinds(directory.resolved(Key(name: "bob", interfaceIndex: 1), resolution(Fixture.bob))) == ["found"])
    // A peer whose record turns invalid is lost.
    #expect(kinds(directory.invalid(Key(name: "bob", interfaceIndex: 1), reason: "bad")) == ["lost", "invalid"])
  }

  @Test func noAddressMeansNotYetFound() {
    var directory = PeerDirectory()
    let key = Key(name: "bob", interfaceIndex: 1)
    #expect(directory.resolved(key, resolution(Fixture.bob, addresses: [])).isEmpty)
    #expect(kinds(directory.resolved(key, resolution(Fixture.bob, addresses: ["fe80::1", "192.0.2.9"]))) == ["found"])
    #expect(directory.peers.first?.endpoints.map(\.host) == ["192.0.2.9", "fe80::1"])
    #expect(directory.peers.first?.endpoints.last?.interfaceIndex == 1)
  }

  /// A newer instance with bob's id and 20 addresses of other hosts (anybody can publish one)
  /// does not put bob's own address last: instances take turns, newest first.
  @Test func aNewerInstanceWithManyAddressesDoesNotPushThePeersOwnToTheEnd() {
    var directory = PeerDirectory()
    _ = directory.resolved(Key(name: "bob", interfaceIndex: 1), resolution(Fixture.bob, addresses: ["192.0.2.9", "fe80::9"]))
    let forged = (1...20).map { "198.51.100.\($0)" }
    _ = directory.resolved(Key(name: "bob (2)", interfaceIndex: 1), resolution(Fixture.bob, addresses: forged))
    let hosts = directory.peers.first?.endpoints.map(\.host) ?? []
    #expect(hosts.count == 22)
    #expect(Array(hosts.prefix(4)) == ["198.51.100.1", "192.0.2.9", "198.51.100.10", "fe80::9"], "\(hosts)")
  }

  @Test func changedDiscoveryInfoIsAnUpdate() {
    var directory = PeerDirectory()
    let key = Key(name: "bob", interfaceIndex: 1)
    _ = directory.resolved(key, resolution(Fixture.bob, info: ["room=a"]))
    #expect(directory.resolved(key, resolution(Fixture.bob, info: ["room=a"])).isEmpty)
    let changes = directory.resolved(key, resolution(Fixture.bob, info: ["room=b"]))
    guard case .updated(let peer)? = changes.first else {
      Issue.record("no update")
      return
    }
    #expect(peer.info["room"] == "b")
  }
}
