import Nearby
import NearbyChat
import NearbyCommandLine
import NearbySystem

#if canImport(Glibc)
  import Glibc
#endif

/// `nearby peers`: the known peers of an identity (read without its lock, so it works while
/// a chat runs), and `nearby peers forget ID`.
struct PeersTool: Tool {
  static let spec = NearbyCommands.Peers.spec

  enum Action: Sendable {
    case list
    case forget(String)
  }

  let stateDirectory: Result<String, IdentityError>
  let action: Action
  let json: Bool

  init(_ parsed: ParsedCommand, environment: ProcessEnvironment) throws(CommandLineError) {
    stateDirectory = SessionSetup.stateDirectory(try parsed.value(NearbyCommands.Common.stateDirectory), environment: environment.variables)
    json = parsed.isSet(NearbyCommands.Common.json)
    switch parsed.argument("action") {
    case nil:
      guard parsed.argument("id") == nil else { throw .usage("give an action before the id: nearby peers forget ID", path: parsed.path) }
      action = .list
    case "forget":
      guard let id = parsed.argument("id"), id.count >= 4, id.allSatisfy(\.isHexDigit) else {
        throw .usage("forget needs the peer's id (or at least 4 of its hex digits): nearby peers forget ID", path: parsed.path)
      }
      action = .forget(id.lowercased())
    case let other?:
      throw .usage("unknown action '\(other)': the only one is 'forget' (without one, the known peers are listed)", path: parsed.path)
    }
  }

  func run(signals: AsyncStream<Int32>?) async -> Int32 {
    let directory: String
    do {
      directory = try stateDirectory.get()
    } catch {
      return failure("\(error) (use --state-dir DIR or NEARBY_STATE_DIR)")
    }
    switch action {
    case .list:
      let peers: [KnownPeer]
      do {
        peers = try PeerIdentity.knownPeers(in: directory)
      } catch {
        return failure("\(error)")
      }
      let output = OutputWriter.standardOutput
      if json {
        for peer in peers {
          output.line(
            JSONValue.object([
              ("id", .string(peer.id.hex)), ("name", .string(peer.name.value)), ("key", .string(peer.publicKey)),
              ("firstSeen", .unsigned(peer.firstSeen)), ("verified", .bool(peer.isVerified)),
            ]).encoded)
        }
      } else if peers.isEmpty {
        var info = stat()
        if stat(directory, &info) != 0 {
          output.line(
            "no known peers: \(directory) does not exist (no chat or relay has used it; --state-dir or NEARBY_STATE_DIR names the one they use)")
        } else {
          output.line("no known peers in \(directory)")
        }
      } else {
        for peer in peers {
          let mark = peer.isVerified ? "verified  " : "unverified"
          output.line("\(peer.id.hex)  \(mark)  \(EventFormatter.sanitize(peer.name.value))")
        }
      }
      return 0
    case .forget(let prefix):
      let identity: PeerIdentity
      do {
        identity = try PeerIdentity(directory: directory)
      } catch {
        if case .inUse = error { return failure("\(error); quit the chat (or relay) that uses it first") }
        return failure("\(error)")
      }
      let matches = identity.knownPeers.filter { $0.id.hex.hasPrefix(prefix) }
      guard matches.count == 1, let peer = matches.first else {
        if matches.isEmpty { return failure("no known peer has an id starting with \(prefix): 'nearby peers' lists them") }
        return failure("\(matches.count) known peers have ids starting with \(prefix): give more digits")
      }
      do {
        try identity.forget(peer.id)
      } catch {
        return failure("\(error)")
      }
      OutputWriter.standardOutput.line("forgot \(EventFormatter.sanitize(peer.name.value)) (\(peer.id.hex))")
      return 0
    }
  }
}
