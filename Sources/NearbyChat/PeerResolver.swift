import Nearby

/// Finds the peer a person means by `NAME` or `ID`.
///
/// Names match case-insensitively; an id matches by its full hex or by a prefix of at least
/// four hex digits. A name that several peers share is ambiguous: the answer lists their ids.
public enum PeerResolver {
  public enum Resolution: Equatable, Sendable {
    case peer(Peer)
    case ambiguous([Peer])
    case notFound
  }

  /// - Parameter candidates: the peers the command may refer to, most relevant first
  ///   (duplicates by id are ignored).
  public static func resolve(_ query: String, among candidates: [Peer]) -> Resolution {
    var unique: [Peer] = []
    for peer in candidates where !unique.contains(where: { $0.id == peer.id }) { unique.append(peer) }
    let lowered = query.lowercased()
    let byName = unique.filter { $0.name.value.lowercased() == lowered }
    if byName.count == 1 { return .peer(byName[0]) }
    if byName.count > 1 { return .ambiguous(byName) }
    if lowered.count >= 4, lowered.allSatisfy(\.isHexDigit) {
      let byID = unique.filter { $0.id.hex.hasPrefix(lowered) }
      if byID.count == 1 { return .peer(byID[0]) }
      if byID.count > 1 { return .ambiguous(byID) }
    }
    return .notFound
  }

  /// The hint for a failed resolution.
  public static func hint(for query: String, _ resolution: Resolution, what: String) -> String {
    switch resolution {
    case .peer: return ""
    case .ambiguous(let peers):
      return "'\(query)' is ambiguous: " + peers.map { "\($0.name.value) (\($0.id.shortHex))" }.joined(separator: ", ") + "; use the id"
    case .notFound:
      return "no \(what) called '\(query)'; /peers lists the peers found, /who the connected ones"
    }
  }
}
