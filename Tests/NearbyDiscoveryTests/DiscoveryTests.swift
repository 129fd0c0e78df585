import Foundation
import NearbyCore
import NearbyDiscovery
import NearbySystem
import NearbyTestSupport
import NearbyTransport
import Testing

#if canImport(Glibc)
  import Glibc
#endif

@Suite("Discovery against real Avahi (private loopback host)", .enabled(if: LAN.avahiAvailable, "needs scripts/lan loopback"))
struct DiscoveryTests {
  let alice = Peer(id: PeerID.random(), name: try! DisplayName("alice"))
  let bob = Peer(id: PeerID.random(), name: try! DisplayName("bob"))

  @Test func ourAdvertiserIsFoundByOurBrowserWithItsRecord() async throws {
    let loop = try EventLoop()
    let type = LAN.uniqueServiceType()
    let info = try DiscoveryInfo(arguments: ["room=kitchen", "emoji=🦊"])
    let (advertiser, registered) = try recordedAdvertiser(
      advertisement: PeerAdvertisement(peer: alice, info: info), serviceType: type, port: 4242, loop: loop)
    advertiser.start()
    let name = try await registered.next("registration") { if case .registered(let name) = $0 { name } else { nil } }
    #expect(name == "alice")

    let (browser, seen) = recordedBrowser(serviceType: type, localPeer: bob.id, loop: loop)
    browser.start()
    let found = try await seen.next("found") { if case .found(let peer) = $0 { peer } else { nil } }
    #expect(found.peer == alice)
    #expect(found.info["room"] == "kitchen")
    #expect(found.info["emoji"] == "🦊")
    #expect(found.endpoints.contains(Endpoint(host: "127.0.0.1", port: 4242)))

    // Changing the info live is seen as an update.
    try advertiser.update(info: try DiscoveryInfo(arguments: ["room=hall"]))
    let updated = try await seen.next("update") { if case .updated(let peer) = $0, peer.info["room"] == "hall" { peer } else { nil } }
    #expect(updated.peer.id == alice.id)

    // Stopping it is seen as lost.
    advertiser.stop()
    let lost = try await seen.next("lost") { if case .lost(let peer) = $0 { peer } else { nil } }
    #expect(lost.id == alice.id)
    #expect(!seen.all.contains { if case .found = $0 { true } else { false } })

    browser.finish()
    advertiser.finish()
    await loop.shutdown()
  }

  @Test func ownAdvertisementIsNotReportedUnlessAsked() async throws {
    let loop = try EventLoop()
    let type = LAN.uniqueServiceType()
    let (advertiser, registered) = try recordedAdvertiser(advertisement: PeerAdvertisement(peer: alice), serviceType: type, port: 4243, loop: loop)
    advertiser.start()
    _ = try await registered.next { if case .registered(let name) = $0 { name } else { nil } }
    let (hiding, hidden) = recordedBrowser(serviceType: type, localPeer: alice.id, loop: loop)
    let (showing, shown) = recordedBrowser(serviceType: type, localPeer: alice.id, includeOwnPeer: true, loop: loop)
    hiding.start()
    showing.start()
    _ = try await shown.next("own peer") { if case .found(let peer) = $0, peer.peer.id == alice.id { peer } else { nil } }
    // The other browser had the same time to see it.
    #expect(hidden.all.isEmpty)
    hiding.finish()
    showing.finish()
    advertiser.finish()
    await loop.shutdown()
  }

  @Test func twoPeersWithOneNameAreBothFoundUnderTheirIDs() async throws {
    let loop = try EventLoop()
    let type = LAN.uniqueServiceType()
    let twin = Peer(id: PeerID.random(), name: alice.name)
    let (first, firstEvents) = try recordedAdvertiser(advertisement: PeerAdvertisement(peer: alice), serviceType: type, port: 5001, loop: loop)
    let (second, secondEvents) = try recordedAdvertiser(advertisement: PeerAdvertisement(peer: twin), serviceType: type, port: 5002, loop: loop)
    first.start()
    let firstName = try await firstEvents.next { if case .registered(let name) = $0 { name } else { nil } }
    second.start()
    let secondName = try await secondEvents.next { if case .registered(let name) = $0 { name } else { nil } }
    #expect(firstName != secondName, "the daemon renames the second one")

    let (browser, seen) = recordedBrowser(serviceType: type, loop: loop)
    browser.start()
    let a = try await seen.next { if case .found(let peer) = $0 { peer } else { nil } }
    let b = try await seen.next { if case .found(let peer) = $0 { peer } else { nil } }
    #expect(Set([a.peer.id, b.peer.id]) == [alice.id, twin.id])
    #expect(a.peer.name == b.peer.name)
    browser.finish()
    first.finish()
    second.finish()
    await loop.shutdown()
  }

  @Test func servicesPublishedByAvahisOwnToolAreFoundAndForeignOnesDoNotBreakBrowsing() async throws {
    let loop = try EventLoop()
    let type = LAN.uniqueServiceType()
    let (browser, seen) = recordedBrowser(serviceType: type, loop: loop)
    browser.start()
    // Another program's service of the same type: no Nearby TXT at all, then a malformed id.
    let carol = PeerID.random()
    let publishers = try [
      ["-s", "printer", type.type, "631", "paper=a4"],
      ["-s", "broken", type.type, "632", "id=xyz", "name=broken", "v=1"],
      ["-s", "carol", type.type, "7000", "id=\(carol.hex)", "name=carol", "v=1", "room=lab"],
    ].map { try ChildProcess("avahi-publish", $0, standardInput: .null, standardOutput: .null, standardError: .null) }
    defer { for publisher in publishers { publisher.terminate(SIGKILL) } }
    let published = publishers[2]
    let found = try await seen.next("carol") { if case .found(let peer) = $0 { peer } else { nil } }
    #expect(found.peer.id == carol)
    #expect(found.peer.name.value == "carol")
    #expect(found.info["room"] == "lab")
    #expect(found.endpoints.first?.port == 7000)
    let invalid = try await seen.next("printer reported") {
      if case .notANearbyPeer(let name, let reason) = $0, name == "printer" { reason } else { nil }
    }
    #expect(invalid.contains("id"))
    _ = try await seen.next("broken reported") { if case .notANearbyPeer(let name, _) = $0, name == "broken" { name } else { nil } }
    published.terminate()
    await published.wait()
    let lost = try await seen.next("carol lost") { if case .lost(let peer) = $0 { peer } else { nil } }
    #expect(lost.id == carol)
    browser.finish()
    await loop.shutdown()
  }

  @Test func avahiBrowseListsOurAdvertiserWithTheTXTKeysOfTheSpec() async throws {
    let loop = try EventLoop()
    let type = LAN.uniqueServiceType()
    let (advertiser, events) = try recordedAdvertiser(
      advertisement: PeerAdvertisement(peer: bob, info: try DiscoveryInfo(arguments: ["room=hall"])), serviceType: type, port: 6123, loop: loop)
    advertiser.start()
    _ = try await events.next { if case .registered(let name) = $0 { name } else { nil } }
    let (status, output) = try await run(["avahi-browse", "-rpt", type.type])
    #expect(status == 0)
    let resolved = output.split(separator: "\n").first { $0.hasPrefix("=") }.map(String.init) ?? ""
    #expect(resolved.contains(";bob;"), "\(output)")
    #expect(resolved.contains(";6123;"))
    for key in ["\"id=\(bob.id.hex)\"", "\"name=bob\"", "\"v=2\"", "\"room=hall\""] {
      #expect(resolved.contains(key), "\(key) missing in \(resolved)")
    }
    advertiser.finish()
    await loop.shutdown()
  }
}

/// A flood of instances, in miniature: a browser that resolves one instance at once and
/// remembers one more is shown three peers. The third is left out (reported once as
/// crowded), and each is found in turn as the ones before it go: the last by asking the
/// daemon again, since DNS-SD announces an instance once (before, it stayed hidden until
/// browsing restarted).
@Suite("Discovery after a flood (real Avahi)", .enabled(if: LAN.avahiAvailable, "needs scripts/lan loopback"))
struct CrowdedDiscoveryTests {
  @Test func anInstanceLeftOutIsFoundOnceThereIsRoom() async throws {
    let loop = try EventLoop()
    let type = LAN.uniqueServiceType()
    let peers = ["ann", "ben", "cat"].map { Peer(id: PeerID.random(), name: try! DisplayName($0)) }
    var advertisers: [PeerID: Advertiser] = [:]
    for (index, peer) in peers.enumerated() {
      let (advertiser, registered) = try recordedAdvertiser(
        advertisement: PeerAdvertisement(peer: peer), serviceType: type, port: UInt16(4300 + index), loop: loop)
      advertiser.start()
      _ = try await registered.next("registration of \(peer.name)") { if case .registered(let name) = $0 { name } else { nil } }
      advertisers[peer.id] = advertiser
    }
    let (stream, continuation) = AsyncStream.makeStream(of: BrowserEvent.self)
    let browser = Browser(serviceType: type, loop: loop, slots: InstanceSlots(limit: 1, waitingLimit: 1)) { continuation.yield($0) }
    let seen = Recorder(stream)
    browser.start()
    let limit = try await seen.next("crowded") { if case .crowded(let limit) = $0 { limit } else { nil } }
    #expect(limit == 2)
    // Each peer found goes away, which makes room for the next.
    var found: [PeerID] = []
    while found.count < peers.count {
      let already = found
      let peer = try await seen.next(within: .seconds(20), "peer \(found.count + 1) of 3 found") { event -> PeerID? in
        if case .found(let peer) = event, !already.contains(peer.peer.id) { peer.peer.id } else { nil }
      }
      found.append(peer)
      advertisers[peer]?.stop()
    }
    #expect(Set(found) == Set(peers.map(\.id)))
    // The first was taken above: there is no other (the browse that asked again found room).
    let crowdedAgain = seen.all.filter { if case .crowded = $0 { true } else { false } }
    #expect(crowdedAgain.isEmpty, "crowded once, not per instance left out: \(crowdedAgain)")
    browser.finish()
    for advertiser in advertisers.values { advertiser.finish() }
    await loop.shutdown()
  }
}

/// An advertiser whose events are recorded.
func recordedAdvertiser(advertisement: PeerAdvertisement, serviceType: ServiceType, port: UInt16, loop: EventLoop) throws -> (
  Advertiser, Recorder<AdvertiserEvent>
) {
  let (stream, continuation) = AsyncStream.makeStream(of: AdvertiserEvent.self)
  let advertiser = try Advertiser(advertisement: advertisement, serviceType: serviceType, port: port, loop: loop) { continuation.yield($0) }
  return (advertiser, Recorder(stream))
}

/// A browser whose events are recorded.
func recordedBrowser(serviceType: ServiceType, localPeer: PeerID? = nil, includeOwnPeer: Bool = false, loop: EventLoop) -> (
  Browser, Recorder<BrowserEvent>
) {
  let (stream, continuation) = AsyncStream.makeStream(of: BrowserEvent.self)
  let browser = Browser(serviceType: serviceType, localPeer: localPeer, includeOwnPeer: includeOwnPeer, loop: loop) { continuation.yield($0) }
  return (browser, Recorder(stream))
}
