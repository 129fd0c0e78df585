import Nearby
import NearbySystem

/// The line-mode output: one line of text (or one JSON object) per chat line, written as it
/// happens.
public struct PlainOutput: ChatOutput {
  public let writer: OutputWriter
  public let formatter: EventFormatter
  /// The peers seen so far (lookalike names show their ids).
  private let names = SharedPeerNames()
  /// Text progress lines at most once a second per transfer (JSON: as the session reports).
  let progress = ProgressThrottle()

  public init(writer: OutputWriter = .standardOutput, json: Bool) {
    self.writer = writer
    self.formatter = EventFormatter(json: json)
  }

  public func show(_ line: ChatLine) {
    if !formatter.json, !progress.allows(line) { return }
    if let text = render(line) { writer.line(text) }
  }

  /// Waits while a queued writer (``OutputWriter/init(fd:queueLimit:)``) is full.
  public func waitForRoom() async { await writer.waitForRoom() }

  /// `carol (0c1d2e3f) [unverified] via r1 (5e6f7a8b) at site3`, or `..., offline (last at site3)`.
  static func relayedText(_ relayed: RelayedPeer) -> String {
    let peer = EventFormatter.label(relayed.peer) + (relayed.isVerified ? "" : " [unverified]")
    let base = "\(peer) via \(EventFormatter.label(relayed.via))"
    guard let site = relayed.site else { return base }
    let name = EventFormatter.sanitize(site.name.isEmpty ? "another site" : site.name)
    return site.isOnline ? base + " at \(name)" : base + " offline (last at \(name): messages wait for it)"
  }

  /// `{"peer": ..., "via": ..., "verified": false, "site": "site3", "online": true}` (site and
  /// online only when known).
  static func relayedJSON(_ relayed: RelayedPeer) -> JSONValue {
    var members: [(String, JSONValue)] = [
      ("peer", EventFormatter.peerJSON(relayed.peer)), ("via", EventFormatter.peerJSON(relayed.via)), ("verified", .bool(relayed.isVerified)),
    ]
    if let site = relayed.site {
      members.append(("site", .string(site.name)))
      members.append(("online", .bool(site.isOnline)))
    }
    return .object(members)
  }

  /// The text of a chat line (nil: nothing to show).
  public func render(_ line: ChatLine) -> String? {
    names.noting(line) { render(line, names: $0) }
  }

  private func render(_ line: ChatLine, names: KnownPeerNames) -> String? {
    let json = formatter.json
    switch line {
    case .ready(let peer, let port, let service):
      if json {
        return JSONValue.object([
          ("event", .string("ready")), ("id", .string(peer.id.hex)), ("name", .string(peer.name.value)), ("port", .number(Int64(port))),
          ("service", .string(service.type)),
        ]).encoded
      }
      return "* ready: \(EventFormatter.label(peer)) listening on port \(port), service \(service.type) — /help for commands"
    case .event(let event):
      return formatter.format(event, names: names)
    case .sent(let id, _, let peers, _):
      if json {
        return JSONValue.object([("event", .string("sent")), ("id", .unsigned(id.rawValue)), ("to", .array(peers.map(EventFormatter.peerJSON)))])
          .encoded
      }
      return "* sent #\(id) to \(peers.map(EventFormatter.label).joined(separator: ", "))"
    case .settled:
      return nil  // each recipient's answer was shown as it came (delivered, or an error)
    case .peers(let found):
      if json {
        return JSONValue.object([("event", .string("peers")), ("peers", .array(found.map { EventFormatter.discoveredJSON("found", $0) }))]).encoded
      }
      if found.isEmpty { return "* no peers found yet" }
      return found.map { EventFormatter.discoveredText("peer", $0) }.joined(separator: "\n")
    case .who(let connected, let verified):
      if json {
        let peers = connected.map { peer -> JSONValue in
          .object([("id", .string(peer.id.hex)), ("name", .string(peer.name.value)), ("verified", .bool(verified.contains(peer.id)))])
        }
        return JSONValue.object([("event", .string("who")), ("peers", .array(peers))]).encoded
      }
      if connected.isEmpty { return "* nobody is connected" }
      return "* connected: " + connected.map { EventFormatter.label($0) + (verified.contains($0.id) ? "" : " [unverified]") }.joined(separator: ", ")
    case .relayed(let peers):
      if json {
        return JSONValue.object([
          ("event", .string("relayed")),
          ("peers", .array(peers.map(Self.relayedJSON))),
        ]).encoded
      }
      return "* through relays: " + peers.map(Self.relayedText).joined(separator: ", ")
    case .invitations(let pending):
      if json {
        return JSONValue.object([("event", .string("invitations")), ("peers", .array(pending.map { EventFormatter.peerJSON($0.peer) }))]).encoded
      }
      return pending.isEmpty
        ? "* no invitation is waiting" : "* waiting for your answer: " + pending.map { EventFormatter.label($0.peer) }.joined(separator: ", ")
    case .transfers(let transfers):
      return Self.render(transfers, json: json)
    case .notice(let text):
      return json ? JSONValue.object([("event", .string("notice")), ("message", .string(text))]).encoded : "* " + text
    case .error(let text):
      return json ? JSONValue.object([("event", .string("error")), ("message", .string(text))]).encoded : "! " + text
    }
  }
}
