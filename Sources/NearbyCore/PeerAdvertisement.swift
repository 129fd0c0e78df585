/// What a peer publishes in its DNS-SD TXT record (PROTOCOL.md section 1.3).
package struct PeerAdvertisement: Hashable, Sendable {
  /// The most bytes a whole TXT record may have (RFC 6763 section 6.2).
  package static let maximumRecordBytes = 1300

  package var peer: Peer
  /// The highest protocol version the peer speaks.
  package var protocolVersion: Int
  /// Whether the peer is a relay (TXT `relay=1`).
  package var isRelay: Bool
  package var info: DiscoveryInfo

  package init(peer: Peer, protocolVersion: Int = ProtocolLimits.version, isRelay: Bool = false, info: DiscoveryInfo = DiscoveryInfo()) {
    var peer = peer
    peer.info = info
    self.peer = peer
    self.protocolVersion = protocolVersion
    self.isRelay = isRelay
    self.info = info
  }

  /// The TXT strings in protocol order: `id`, `name`, `v`, `relay`, then the info.
  package var txtStrings: [[UInt8]] {
    var strings: [[UInt8]] = [
      Array("id=\(peer.id.hex)".utf8),
      Array("name=\(peer.name.value)".utf8),
      Array("v=\(protocolVersion)".utf8),
    ]
    if isRelay { strings.append(Array("relay=1".utf8)) }
    for entry in info.entries { strings.append(Array("\(entry.key)=\(entry.value)".utf8)) }
    return strings
  }

  /// The TXT record's rdata.
  /// - Throws: ``DiscoveryInfoError/recordTooLong(byteCount:)`` over 1300 bytes.
  package func txtRecord() throws(DiscoveryInfoError) -> [UInt8] {
    let record = TXTRecord.encode(txtStrings)
    if record.count > Self.maximumRecordBytes { throw .recordTooLong(byteCount: record.count) }
    return record
  }

  /// Reads a TXT record published by someone else.
  /// - Returns: the advertisement, or why the instance is not a Nearby peer.
  package static func parse(txt rdata: some Collection<UInt8>) -> Result<PeerAdvertisement, AdvertisementError> {
    guard let strings = TXTRecord.parse(rdata) else { return .failure(.malformedRecord) }
    var id: PeerID?
    var name: DisplayName?
    var version: Int?
    var relay = false
    var entries: [DiscoveryInfo.Entry] = []
    var seen = Set<String>()
    for string in strings {
      let (keyBytes, valueBytes) = TXTRecord.keyValue(string)
      guard let key = String(validating: keyBytes, as: UTF8.self), !key.isEmpty else { continue }
      let lowered = key.lowercased()
      // RFC 6763 6.4: only the first occurrence of a key counts.
      guard seen.insert(lowered).inserted else { continue }
      let value = valueBytes.flatMap { String(validating: $0, as: UTF8.self) }
      switch lowered {
      case "id":
        guard let value, let parsed = PeerID(hex: value) else { return .failure(.invalidID) }
        id = parsed
      case "name":
        guard let valueBytes else { return .failure(.invalidName(.empty)) }
        do { name = try DisplayName(utf8: valueBytes) } catch { return .failure(.invalidName(error)) }
      case "v":
        guard let value, let parsed = Int(value), parsed >= 1 else { return .failure(.invalidVersion) }
        version = parsed
      case "relay":
        relay = value == "1"
      default:
        entries.append(DiscoveryInfo.Entry(key: key, value: value ?? ""))
      }
    }
    guard let id else { return .failure(.missingKey("id")) }
    guard let name else { return .failure(.missingKey("name")) }
    guard let version else { return .failure(.missingKey("v")) }
    let info = DiscoveryInfo(unchecked: entries)
    return .success(PeerAdvertisement(peer: Peer(id: id, name: name, info: info), protocolVersion: version, isRelay: relay, info: info))
  }
}

/// Why a TXT record does not describe a Nearby peer.
package enum AdvertisementError: Error, Hashable, Sendable, CustomStringConvertible {
  case malformedRecord
  case missingKey(String)
  case invalidID
  case invalidName(DisplayNameError)
  case invalidVersion

  package var description: String {
    switch self {
    case .malformedRecord: return "the TXT record is not a valid sequence of character-strings"
    case .missingKey(let key): return "the TXT record has no '\(key)' key"
    case .invalidID: return "the TXT 'id' is not 32 hex digits"
    case .invalidName(let error): return "the TXT 'name' is invalid: \(error)"
    case .invalidVersion: return "the TXT 'v' is not a protocol version (an integer of at least 1)"
    }
  }
}
