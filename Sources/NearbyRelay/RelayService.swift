import Nearby
import NearbyFederation
import NearbySystem

/// `nearby relay`: a headless session that forwards messages between its peers, logging one
/// `key=value` line per event on stderr and a stats line at a fixed interval.
public actor RelayService {
  public enum LogLevel: Int, Comparable, Sendable {
    case debug = 0
    case info = 1
    case warning = 2
    case error = 3

    public init?(name: String) {
      switch name {
      case "debug": self = .debug
      case "info": self = .info
      case "warning": self = .warning
      case "error": self = .error
      default: return nil
      }
    }

    var name: String {
      switch self {
      case .debug: "debug"
      case .info: "info"
      case .warning: "warning"
      case .error: "error"
      }
    }

    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }
  }

  let session: NearbySession
  let log: OutputWriter
  let level: LogLevel
  let statsInterval: Duration?
  let allowFile: String?
  let connect: [Endpoint]
  /// The sites this relay federates with, through NATS (`--federate`).
  let federation: FederationConfiguration?
  private var lastStats = RelayStatistics()
  private var lastStatsAt = ContinuousClock.now

  /// - Parameters:
  ///   - federation: join other sites through NATS; the session must have been made with
  ///     `SessionConfiguration.federation` set to the same site.
  public init(
    session: NearbySession, log: OutputWriter = .standardError, level: LogLevel, statsInterval: Duration?, allowFile: String?, connect: [Endpoint],
    federation: FederationConfiguration? = nil
  ) {
    self.session = session
    self.log = log
    self.level = level
    self.statsInterval = statsInterval
    self.allowFile = allowFile
    self.connect = connect
    self.federation = federation
  }

  /// Reads an allow-list file: one peer id per line; `#` starts a comment.
  /// - Throws: a message naming the file and the bad line.
  public static func readAllowList(_ path: String) throws -> Set<PeerID> {
    guard let file = fopen(path, "r") else {
      throw RelayError("cannot read the allow-list \(path): \(String(cString: strerror(errno)))")
    }
    defer { fclose(file) }
    var ids: Set<PeerID> = []
    var number = 0
    var line: UnsafeMutablePointer<CChar>?
    var capacity = 0
    defer { free(line) }
    while getline(&line, &capacity, file) > 0 {
      number += 1
      var text = String(cString: line!)
      if let hash = text.firstIndex(of: "#") { text = String(text[..<hash]) }
      let trimmed = text.split(whereSeparator: \.isWhitespace).joined()
      if trimmed.isEmpty { continue }
      guard let id = PeerID(hex: trimmed) else {
        throw RelayError("\(path) line \(number): '\(trimmed)' is not a peer id (32 hex digits)")
      }
      ids.insert(id)
    }
    return ids
  }

  /// Runs until SIGINT or SIGTERM (goodbye to every peer, exit 0); SIGHUP reloads the
  /// allow-list. - Returns: the exit code.
  public func run(signals: AsyncStream<Int32>?) async -> Int32 {
    let session = self.session
    var services: [ServiceGroup.Service] = [
      .init("events") {
        for await event in session.events { await self.record(event) }
      }
    ]
    var federated: Federation?
    if let configuration = federation {
      // Attached before the session runs: nothing that crosses sites is missed.
      let federation = await Federation(configuration: configuration, session: session)
      federated = federation
      write(.info, "federating", ["site": configuration.site, "servers": configuration.nats.servers.joined(separator: ",")])
      services.append(.init("federation") { await federation.run() })
      services.append(
        .init("federation-events") {
          for await event in federation.events { await self.record(event) }
        })
    }
    if let interval = statsInterval {
      let federation = federated
      services.append(
        .init("stats") {
          while true {
            try await Task.sleep(for: interval)
            await self.writeStats(federation)
          }
        })
    }
    do {
      try await ServiceGroup(
        main: .init("session") { try await session.run() }, alongside: services, signals: signals,
        onSignal: { signal in
          switch signal {
          case SIGINT, SIGTERM:
            await self.write(.info, "shutdown", ["signal": signal == SIGINT ? "INT" : "TERM"])
            await session.shutdown()
          case SIGHUP:
            await self.reloadAllowList()
          default:
            break
          }
          return false
        }
      ).run()
    } catch {
      write(.error, "failed", ["error": "\(error)"])
      return 1
    }
    write(.info, "stopped", [:])
    return 0
  }

  private func reloadAllowList() async {
    guard let allowFile else {
      write(.info, "reload", ["allow": "none (no --allow file)"])
      return
    }
    do {
      let ids = try Self.readAllowList(allowFile)
      await session.setAcceptPolicy(.none, allowList: ids)
      write(.info, "reload", ["allow": allowFile, "peers": "\(ids.count)"])
    } catch {
      write(.error, "reload", ["error": "\(error)", "kept": "the previous allow-list"])
    }
  }

  private func record(_ event: SessionEvent) async {
    switch event {
    case .status(.listening(let port)):
      write(.info, "listening", ["port": "\(port)", "service": session.configuration.serviceType.type, "id": session.configuration.peer.id.hex])
      for endpoint in connect { await session.invite(endpoints: [endpoint]) }
    case .status(.advertised(let name)): write(.info, "advertised", ["name": name])
    case .status(.advertisingFailed(let text)): write(.warning, "advertising", ["error": text])
    case .status(.browsingFailed(let text)): write(.warning, "browsing", ["error": text])
    case .status(.foreignService(let instance, let reason)): write(.debug, "foreign", ["instance": instance, "reason": reason])
    case .status(.discoveryCrowded(let limit)): write(.warning, "crowded", ["limit": "\(limit)"])
    case .status(.connectionRejected(let peer, let reason)): write(.warning, "rejected", fields(peer, ["reason": reason]))
    case .found(let found): write(.info, "found", fields(found.peer, ["host": found.hostName]))
    case .updated(let found): write(.debug, "updated", fields(found.peer))
    case .lost(let peer): write(.info, "lost", fields(peer))
    case .invitation(let invitation):
      // A relay never asks: an invitation only waits when the policy is "ask" (not offered).
      write(.info, "invitation", fields(invitation.peer))
    case .invitationWithdrawn(let peer, let reason): write(.debug, "invitation-withdrawn", fields(peer, ["reason": reason]))
    case .connecting(let peer): write(.debug, "connecting", fields(peer))
    case .connected(let peer, _): write(.info, "connected", fields(peer))
    case .declined(let peer, let reason): write(.info, "declined", fields(peer, ["reason": "\(reason)"]))
    case .reconnecting(let peer, let attempt): write(.info, "reconnecting", fields(peer, ["attempt": "\(attempt)"]))
    case .reconnected(let peer): write(.info, "reconnected", fields(peer))
    case .disconnected(let peer, let reason): write(.info, "disconnected", fields(peer, ["reason": "\(reason)"]))
    case .message(let message): write(.debug, "message", fields(message.from, ["bytes": "\(message.body.count)"]))
    case .delivered(let id, let peer): write(.debug, "delivered", fields(peer, ["message": "\(id)"]))
    case .queued(let id, let peer): write(.debug, "queued", fields(peer, ["message": "\(id)"]))
    case .reachable(let peer, let relay): write(.info, "reachable", fields(peer, ["via": relay.id.hex]))
    case .unreachable(let peer): write(.info, "unreachable", fields(peer))
    case .error(let error): write(.warning, "error", ["error": error.description])
    case .verification(let peer, let code, _): write(.info, "verification", fields(peer, ["code": code]))
    case .trusted(let peer): write(.info, "trusted", fields(peer))
    case .impostorWarning(let peer, let verified): write(.warning, "impostor", fields(peer, ["verified_id": verified.id.hex]))
    case .transfer(.offer(let offer)):
      // A relay passes files on (sealed end to end); it takes none itself.
      write(.info, "offer-refused", fields(offer.from, ["transfer": offer.id.hex, "files": "\(offer.files.count)"]))
      await offer.refuse()
    case .transfer: break
    }
  }

  private func fields(_ peer: Peer?, _ extra: [String: String] = [:]) -> [String: String] {
    var result = peerFields(peer)
    result.merge(extra) { $1 }
    return result
  }

  private func peerFields(_ peer: Peer?) -> [String: String] {
    guard let peer else { return [:] }
    return ["peer": peer.name.value, "id": peer.id.hex]
  }

  private func record(_ event: FederationEvent) {
    switch event {
    case .nats(.connected(let server)): write(.info, "nats", ["state": "connected", "server": server])
    case .nats(.reconnected(let server)): write(.info, "nats", ["state": "reconnected", "server": server])
    case .nats(.disconnected): write(.warning, "nats", ["state": "disconnected", "reason": "the server went away; trying the others"])
    case .nats(.closed): write(.info, "nats", ["state": "closed"])
    case .nats(.error(let text)): write(.warning, "nats", ["state": "error", "error": text])
    case .ready(let replicas): write(.info, "federation", ["state": "ready", "replicas": "\(replicas)"])
    case .setupFailed(let text): write(.warning, "federation", ["state": "setup-failed", "error": text, "reason": "tried again in 2 s"])
    case .unusable(let text):
      write(.error, "federation", ["state": "stopped", "error": text, "reason": "the NATS settings cannot work: fix them and restart the relay"])
    case .remotePeer(let peer, let site):
      write(.info, "remote", fields(peer, ["site": site.name, "state": site.isOnline ? "online" : "offline"]))
    case .warning(let text): write(.warning, "federation", ["error": text])
    }
  }

  private func writeStats(_ federation: Federation?) async {
    let stats = await session.relayStatistics
    let peers = await session.connectedPeers.count
    let relayed = await session.relayedPeers.count
    let depths = await session.queueDepths
    let now = ContinuousClock.now
    let seconds = max(Double((now - lastStatsAt).components.attoseconds) / 1e18 + Double((now - lastStatsAt).components.seconds), 0.001)
    func rate(_ current: UInt64, _ previous: UInt64) -> String {
      let value = Double(current &- previous) / seconds
      return String(Int((value * 10).rounded())).inserting(decimalPointAt: 1)
    }
    var fields = [
      "peers": "\(peers)", "relayed_peers": "\(relayed)",
      "messages_per_s": rate(stats.forwardedMessages, lastStats.forwardedMessages),
      "bytes_per_s": rate(stats.forwardedBytes, lastStats.forwardedBytes),
      "queued_bytes_max": "\(depths.first ?? 0)", "queued_bytes_total": "\(depths.reduce(0, +))",
      "forwarded": "\(stats.forwardedMessages)", "dropped_duplicate": "\(stats.duplicatesDropped)",
      "dropped_unknown_recipient": "\(stats.unknownRecipients)", "dropped_hop_limit": "\(stats.hopLimitDrops)",
      "dropped_queue_full": "\(stats.queueFullDrops)", "dropped_forged": "\(stats.forgeriesDropped)",
      "closed_roster_limit": "\(stats.rosterLimitCloses)",
    ]
    if let federation {
      let nats = await federation.currentStatistics()
      fields.merge([
        "nats": nats.isConnected ? "connected" : "disconnected", "nats_server": nats.server ?? "none", "nats_reconnects": "\(nats.reconnects)",
        "nats_published": "\(nats.published)", "nats_publish_retries": "\(nats.publishRetries)", "nats_publish_failed": "\(nats.publishFailures)",
        "nats_pending": "\(nats.publishesPending)", "nats_delivered": "\(nats.delivered)", "nats_copies_skipped": "\(nats.copiesSkipped)",
        "nats_acked": "\(nats.acknowledged)", "nats_expired": "\(nats.expired)", "nats_rejected": "\(nats.rejected)",
        "remote_peers": "\(nats.remoteOnline)", "offline_peers": "\(nats.remoteOffline)",
      ]) { $1 }
    }
    write(.info, "stats", fields)
    lastStats = stats
    lastStatsAt = now
  }

  /// `ts=... level=info event=connected peer=bob id=...`: stable keys, values quoted when
  /// they contain spaces, quotes or control characters.
  func write(_ level: LogLevel, _ event: String, _ fields: [String: String]) {
    guard level >= self.level else { return }
    var line = "ts=\(Self.timestamp()) level=\(level.name) event=\(event)"
    let order = ["peer", "id", "via", "state", "site", "server", "host", "port", "service", "name", "reason", "error", "signal", "allow"]
    let keys = fields.keys.sorted { (order.firstIndex(of: $0) ?? 99, $0) < (order.firstIndex(of: $1) ?? 99, $1) }
    for key in keys { line += " \(key)=\(Self.quote(fields[key]!))" }
    log.line(line)
  }

  static func quote(_ value: String) -> String {
    // Quoted (JSON-escaped) unless every character is visible: C1 controls (U+0085 ends a
    // line for some readers, U+009B starts a terminal sequence), bidirectional controls and
    // line separators from a peer's instance or host name forged or reordered log lines.
    let plain =
      !value.isEmpty && HiddenCharacters.first(in: value) == nil
      && value.unicodeScalars.allSatisfy { $0.value > 0x20 && $0 != "\"" && $0 != "=" && $0.value != 0xA0 }
    if plain { return value }
    return JSONValue.string(value).encoded
  }

  static func timestamp() -> String {
    var spec = timespec()
    clock_gettime(CLOCK_REALTIME, &spec)
    var seconds = spec.tv_sec
    var parts = tm()
    gmtime_r(&seconds, &parts)
    func pad(_ value: Int32, _ width: Int) -> String {
      let text = String(value)
      return String(repeating: "0", count: max(0, width - text.count)) + text
    }
    return
      "\(pad(parts.tm_year + 1900, 4))-\(pad(parts.tm_mon + 1, 2))-\(pad(parts.tm_mday, 2))T\(pad(parts.tm_hour, 2)):\(pad(parts.tm_min, 2)):\(pad(parts.tm_sec, 2)).\(pad(Int32(spec.tv_nsec / 1_000_000), 3))Z"
  }
}

/// A relay configuration problem, described for the operator.
public struct RelayError: Error, CustomStringConvertible {
  public let description: String
  public init(_ description: String) { self.description = description }
}

extension String {
  /// "123" with one decimal: "12.3".
  fileprivate func inserting(decimalPointAt digits: Int) -> String {
    let padded = count <= digits ? String(repeating: "0", count: digits + 1 - count) + self : self
    return padded.dropLast(digits) + "." + padded.suffix(digits)
  }
}

#if canImport(Glibc)
  import Glibc
#endif
