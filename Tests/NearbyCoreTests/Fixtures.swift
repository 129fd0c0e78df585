import NearbyCore

/// Values shared by the core tests.
enum Fixture {
  static let aliceID = PeerID(hex: "0000000000000000000000000000000a")!
  static let bobID = PeerID(hex: "0000000000000000000000000000000b")!
  static let carolID = PeerID(hex: "0000000000000000000000000000000c")!
  static let alice = Peer(id: aliceID, name: try! DisplayName("alice"))
  static let bob = Peer(id: bobID, name: try! DisplayName("bob"))
  static let carol = Peer(id: carolID, name: try! DisplayName("carol"))

  static func hello(_ peer: Peer, capabilities: Capabilities = [], min: UInt8 = 1, max: UInt8 = 1) -> Frame.Hello {
    Frame.Hello(minVersion: min, maxVersion: max, capabilities: capabilities, peer: peer)
  }

  static func peer(_ index: Int) -> Peer {
    Peer(id: PeerID(high: 0x1000, low: UInt64(index)), name: try! DisplayName("peer\(index)"))
  }
}

extension Duration {
  static func ms(_ value: Int) -> Duration { .milliseconds(value) }
}
