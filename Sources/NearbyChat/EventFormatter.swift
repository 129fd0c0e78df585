import Nearby
import NearbySystem

/// Turns session events into one line each: text for people, or a JSON object for scripts.
public struct EventFormatter: Sendable {
  public var json: Bool

  public init(json: Bool) { self.json = json }

  /// Text from a peer made safe for a terminal: control characters (which could move the
  /// cursor or change colors) are shown as escapes, and so are the other hidden characters
  /// (``HiddenCharacters``: bidirectional controls that reorder what follows, zero-width
  /// characters, line separators) as `\u{202E}`; the line stays one line.
  public static func sanitize(_ text: String) -> String {
    // The common case, nothing to escape, costs one pass and no copy.
    guard HiddenCharacters.first(in: text) != nil else { return text }
    var out = ""
    out.unicodeScalars.reserveCapacity(text.unicodeScalars.count)
    var previous: Unicode.Scalar?
    var iterator = text.unicodeScalars.makeIterator()
    var current = iterator.next()
    while let scalar = current {
      let next = iterator.next()
      switch scalar {
      case "\n": out += "\\n"
      case "\t": out += "    "
      case "\r": out += "\\r"
      case _ where scalar.value < 0x20 || (scalar.value >= 0x7F && scalar.value <= 0x9F):
        out += "\\x" + (scalar.value < 16 ? "0" : "") + String(scalar.value, radix: 16)
      case _ where HiddenCharacters.isHidden(scalar, after: previous, before: next):
        out += "\\u{" + String(scalar.value, radix: 16, uppercase: true) + "}"
      default: out.unicodeScalars.append(scalar)
      }
      previous = scalar
      current = next
    }
    return out
  }

  package static func peerJSON(_ peer: Peer) -> JSONValue {
    .object([("id", .string(peer.id.hex)), ("name", .string(peer.name.value))])
  }

  package static func label(_ peer: Peer) -> String { "\(sanitize(peer.name.value)) (\(peer.id.shortHex))" }

  package static func infoText(_ info: DiscoveryInfo) -> String {
    info.isEmpty ? "" : " [" + info.map { "\(sanitize($0.key))=\(sanitize($0.value))" }.joined(separator: " ") + "]"
  }

  package static func clock(_ milliseconds: UInt64) -> String {
    var seconds = time_t(milliseconds / 1000)
    var parts = tm()
    localtime_r(&seconds, &parts)
    func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
    return "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec))"
  }

  /// The JSON of a discovered peer (`found` / `updated` / `nearby browse --json`).
  public static func discoveredJSON(_ event: String, _ found: DiscoveredPeer) -> JSONValue {
    .object([
      ("event", .string(event)), ("peer", peerJSON(found.peer)), ("host", .string(found.hostName)),
      ("port", .number(Int64(found.endpoints.first?.port ?? 0))),
      ("addresses", .array(found.endpoints.map { .string($0.host) })),
      ("info", .object(found.info.map { ($0.key, .string($0.value)) })),
    ])
  }

  /// The text of a discovered peer.
  public static func discoveredText(_ verb: String, _ found: DiscoveredPeer) -> String {
    let addresses = found.endpoints.map(\.description).joined(separator: ", ")
    return "* \(verb) \(label(found.peer)) at \(sanitize(found.hostName)) \(addresses)\(infoText(found.info))"
  }

  /// One line for an event, or nil for events this output does not show.
  /// - Parameter names: the peers seen so far: a message from a peer whose name looks like
  ///   another's shows the sender's short id.
  public func format(_ event: SessionEvent, names: KnownPeerNames = KnownPeerNames()) -> String? {
    json ? formatJSON(event)?.encoded : formatText(event, names: names)
  }

  package func formatText(_ event: SessionEvent, names: KnownPeerNames = KnownPeerNames()) -> String? {
    switch event {
    case .found(let peer): return Self.discoveredText("found", peer)
    case .updated(let peer): return Self.discoveredText("updated", peer)
    case .lost(let peer): return "* lost \(Self.label(peer))"
    case .invitation(let invitation):
      let context = invitation.context.isEmpty ? "" : " (context: \(Self.sanitize(String(decoding: invitation.context, as: UTF8.self))))"
      let name = Self.sanitize(invitation.peer.name.value)
      return "* \(Self.label(invitation.peer)) invites you\(context) — /accept \(name) or /decline \(name)"
    case .invitationWithdrawn(let peer, let reason): return "* the invitation from \(Self.label(peer)) is gone: \(Self.sanitize(reason))"
    case .connecting(let peer): return "* connecting to \(Self.label(peer))"
    case .connected(let peer, let security):
      if security.isVerified { return "* connected to \(Self.label(peer)) (verified)" }
      return
        "* connected to \(Self.label(peer)), unverified: code \(security.groupedCode) (/verify \(Self.sanitize(peer.name.value)))"
    case .declined(let peer, let reason):
      return reason == .timeout
        ? "* \(Self.label(peer)) did not answer your invitation in time"
        : "* \(Self.label(peer)) declined your invitation (\(reason))"
    case .reconnecting(let peer, let attempt):
      return attempt == 0
        ? "* lost the connection to \(Self.label(peer)): waiting for it to reconnect"
        : "* reconnecting to \(Self.label(peer)) (attempt \(attempt))"
    case .reconnected(let peer): return "* reconnected to \(Self.label(peer))"
    case .disconnected(let peer, let reason): return "* disconnected from \(Self.label(peer)): \(Self.sanitize(reason.description))"
    case .message(let message):
      let text = Self.sanitize(String(decoding: message.body, as: UTF8.self))
      return "[\(Self.clock(message.timestamp))] \(names.label(message.from))\(message.isPrivate ? " (private)" : ""): \(text)"
    case .delivered(let id, let peer): return "* delivered #\(id) to \(Self.label(peer))"
    case .queued(let id, let peer): return "* queued #\(id) for \(Self.label(peer)): offline, delivered when it connects again"
    case .reachable(let peer, let relay): return "* \(Self.label(peer)) can be reached through \(Self.label(relay))"
    case .unreachable(let peer): return "* \(Self.label(peer)) cannot be reached any more"
    case .error(let error): return "! \(Self.sanitize(error.description))"
    case .verification(let peer, let code, let asked):
      let name = Self.sanitize(peer.name.value)
      let grouped = code.count == 6 ? code.prefix(3) + " " + code.suffix(3) : Substring(code)
      return (asked ? "* \(Self.label(peer)) asks you to compare codes: " : "* the code of your session with \(Self.label(peer)) is ")
        + "\(grouped) — if \(name) sees the same, type /trust \(name)"
    case .trusted(let peer): return "* \(Self.label(peer)) is verified: its key is remembered"
    case .impostorWarning(let peer, let verified):
      return
        "! \(Self.label(peer)) calls itself \(Self.sanitize(verified.name.value)) but is not the \(Self.label(verified)) you verified: it has another key"
    case .transfer(let transfer): return formatText(transfer)
    case .status(let status):
      switch status {
      case .listening: return nil  // the chat prints its own ready line
      case .advertised(let name): return "* advertised as \"\(Self.sanitize(name))\""
      case .advertisingFailed(let text): return "! advertising: \(text)"
      case .browsingFailed(let text): return "! browsing: \(text)"
      case .foreignService(let instance, let reason): return "* ignoring '\(Self.sanitize(instance))': not a Nearby peer (\(Self.sanitize(reason)))"
      case .discoveryCrowded(let limit): return Self.crowdedText(limit)
      case .connectionRejected(let peer, let reason):
        return "* closed a connection\(peer.map { " from \(Self.label($0))" } ?? ""): \(Self.sanitize(reason))"
      }
    }
  }

  /// Discovery left instances out (``SessionStatus/discoveryCrowded(limit:)``), in words.
  package static func crowdedText(_ limit: Int) -> String {
    "! discovery: more than \(limit) services of this type announced on the LAN (a flood?); the newest are left out, and looked for again once there is room"
  }

  /// The same as a JSON line: `{"event":"crowded","limit":N}`.
  package static func crowdedJSON(_ limit: Int) -> JSONValue {
    .object([("event", .string("crowded")), ("limit", .number(Int64(limit)))])
  }

  package func formatJSON(_ event: SessionEvent) -> JSONValue? {
    func object(_ name: String, _ members: [(String, JSONValue)]) -> JSONValue { .object([("event", .string(name))] + members) }
    switch event {
    case .found(let peer): return Self.discoveredJSON("found", peer)
    case .updated(let peer): return Self.discoveredJSON("updated", peer)
    case .lost(let peer): return object("lost", [("peer", Self.peerJSON(peer))])
    case .invitation(let invitation):
      return object(
        "invitation", [("peer", Self.peerJSON(invitation.peer)), ("context", .string(String(decoding: invitation.context, as: UTF8.self)))])
    case .invitationWithdrawn(let peer, let reason):
      return object("invitationWithdrawn", [("peer", Self.peerJSON(peer)), ("reason", .string(reason))])
    case .connecting(let peer): return object("connecting", [("peer", Self.peerJSON(peer))])
    case .connected(let peer, let security):
      return object("connected", [("peer", Self.peerJSON(peer)), ("verified", .bool(security.isVerified))])
    case .declined(let peer, let reason): return object("declined", [("peer", Self.peerJSON(peer)), ("reason", .string(reason.description))])
    case .reconnecting(let peer, let attempt):
      return object("reconnecting", [("peer", Self.peerJSON(peer)), ("attempt", .number(Int64(attempt)))])
    case .reconnected(let peer): return object("reconnected", [("peer", Self.peerJSON(peer))])
    case .disconnected(let peer, let reason):
      return object("disconnected", [("peer", Self.peerJSON(peer)), ("reason", .string(reason.description))])
    case .message(let message):
      return object(
        "message",
        [
          ("from", Self.peerJSON(message.from)), ("text", .string(String(decoding: message.body, as: UTF8.self))),
          ("id", .unsigned(message.id.rawValue)), ("private", .bool(message.isPrivate)), ("timestamp", .unsigned(message.timestamp)),
        ])
    case .delivered(let id, let peer): return object("delivered", [("id", .unsigned(id.rawValue)), ("peer", Self.peerJSON(peer))])
    case .queued(let id, let peer): return object("queued", [("id", .unsigned(id.rawValue)), ("peer", Self.peerJSON(peer))])
    case .reachable(let peer, let relay): return object("reachable", [("peer", Self.peerJSON(peer)), ("via", Self.peerJSON(relay))])
    case .unreachable(let peer): return object("unreachable", [("peer", Self.peerJSON(peer))])
    case .error(let error):
      var members: [(String, JSONValue)] = [("message", .string(error.description))]
      if case .undelivered(let id, let peer, let peerID, _) = error {
        members.append(("id", .unsigned(id.rawValue)))
        members.append(("peer", peer.map(Self.peerJSON) ?? .object([("id", .string(peerID.hex))])))
      }
      return object("error", members)
    case .verification(let peer, let code, let asked):
      return object("verification", [("peer", Self.peerJSON(peer)), ("code", .string(code)), ("asked", .bool(asked))])
    case .trusted(let peer): return object("trusted", [("peer", Self.peerJSON(peer))])
    case .impostorWarning(let peer, let verified):
      return object("impostor", [("peer", Self.peerJSON(peer)), ("verified", Self.peerJSON(verified))])
    case .transfer(let transfer): return formatJSON(transfer)
    case .status(let status):
      switch status {
      case .listening: return nil
      case .advertised(let name): return object("advertised", [("name", .string(name))])
      case .advertisingFailed(let text): return object("error", [("message", .string("advertising: \(text)"))])
      case .browsingFailed(let text): return object("error", [("message", .string("browsing: \(text)"))])
      case .foreignService(let instance, let reason): return object("foreign", [("instance", .string(instance)), ("reason", .string(reason))])
      case .discoveryCrowded(let limit): return Self.crowdedJSON(limit)
      case .connectionRejected(let peer, let reason):
        return object("rejected", [("peer", peer.map(Self.peerJSON) ?? .null), ("reason", .string(reason))])
      }
    }
  }
}

#if canImport(Glibc)
  import Glibc
#endif
