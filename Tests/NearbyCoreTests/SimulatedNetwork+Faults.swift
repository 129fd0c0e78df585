import NearbyCore

/// Network faults for the simulated network: partitions that silence the links between two
/// nodes (what is already on its way still arrives; a silenced side's close does not) and
/// refuse new connections between them.
extension SimulatedNetwork {
  /// Cuts `a` and `b` apart.
  mutating func partition(_ a: PeerID, _ b: PeerID) {
    partitioned.insert([a, b].sorted())
    for (link, remote) in links where (link.node == a && remote.node == b) || (link.node == b && remote.node == a) {
      silenced.insert(link)
    }
  }

  /// Joins them again (new connections work; the old ones stay silent).
  mutating func heal(_ a: PeerID, _ b: PeerID) {
    partitioned.remove([a, b].sorted())
  }

  /// Silences what `from` sends to `to` on their current links, one way only.
  mutating func silence(from: PeerID, to: PeerID) {
    for (link, remote) in links where link.node == from && remote.node == to { silenced.insert(link) }
  }

  /// The texts of the messages `node` was handed so far (and takes them out of its events).
  mutating func receivedTexts(_ node: PeerID) -> [String] {
    take(node).compactMap { event in
      if case .message(let message) = event { return String(decoding: message.body, as: UTF8.self) }
      return nil
    }
  }
}
