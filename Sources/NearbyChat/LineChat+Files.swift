import Nearby
import NearbySystem

#if canImport(Glibc)
  import Glibc
#endif

/// The chat's file commands: `/send NAME|ID PATH...`, `/receive [OFFER]`, `/refuse [OFFER]`,
/// `/transfers`, `/cancel [TRANSFER]`. Offers and transfers are named by 4 or more hex
/// digits of their id, as peers are.
extension LineChat {
  func handleFileCommand(_ command: ChatCommand) async {
    switch command {
    case .sendFiles(let target, let paths):
      guard let peer = await resolve(target, among: await candidates(connectedFirst: true), what: "peer") else { return }
      do {
        let transfer = try await session.sendFiles(at: paths.map(Self.expandingHome), to: peer.id)
        var text = "offered \(EventFormatter.offerSummary(transfer.files)) to \(EventFormatter.label(peer)): transfer \(transfer.id.shortHex)"
        if !transfer.skipped.isEmpty {
          text += " (left out, not regular files or folders: \(transfer.skipped.prefix(3).map(EventFormatter.sanitize).joined(separator: ", "))"
          text += transfer.skipped.count > 3 ? ", and \(transfer.skipped.count - 3) more)" : ")"
        }
        output.show(.notice(text))
      } catch {
        output.show(.error(error.description))
      }
    case .receive(let query, let patterns):
      guard let offer = await offer(query, command: "/receive") else { return }
      guard let directory = session.configuration.downloadsDirectory else {
        output.show(.error("no download folder: start the chat with --downloads DIR (or set HOME)"))
        return
      }
      do {
        if patterns.isEmpty {
          try await offer.accept(into: directory)
        } else {
          switch Self.choose(patterns, in: offer.files) {
          case .success(let indices): try await offer.accept(only: indices, into: directory)
          case .failure(let problem):
            output.show(.error(problem.text))
            return
          }
        }
      } catch {
        output.show(.error("could not accept \(offer.id.shortHex): \(error)"))
      }
    case .refuse(let query):
      guard let offer = await offer(query, command: "/refuse") else { return }
      await offer.refuse()
    case .transfers:
      output.show(.transfers(await session.transfers))
    case .cancelTransfer(let query):
      let going = await session.transfers
      guard let transfer = pick(query, among: going.map(\.progress.id), what: "transfer", command: "/cancel") else { return }
      await session.cancelTransfer(transfer)
    default:
      break
    }
  }

  /// The files of an offer that `patterns` name: each pattern is a file's name, a folder of
  /// the offer (everything below it), or a shell pattern (`*.jpg`, `photos/*`). A pattern
  /// that matches nothing is an error naming the offer's first files.
  package static func choose(
    _ patterns: [String], in files: [OfferedFile], instead: String = "or /receive OFFER for all of them"
  ) -> Result<[Int], CommandProblem> {
    var chosen = Set<Int>()
    for pattern in patterns {
      let folder = pattern.hasSuffix("/") ? pattern : pattern + "/"
      let matches = files.indices.filter { index in
        let name = files[index].name
        return name == pattern || name.hasPrefix(folder) || fnmatch(pattern, name, 0) == 0
      }
      guard !matches.isEmpty else {
        let names = files.prefix(5).map { EventFormatter.sanitize($0.name) }.joined(separator: ", ")
        return .failure(
          CommandProblem(
            text:
              "no file of the offer is '\(EventFormatter.sanitize(pattern))' (its files: \(names)\(files.count > 5 ? ", and \(files.count - 5) more" : "")): "
              + "name a file, a folder or a pattern such as *.jpg, \(instead)"
          ))
      }
      chosen.formUnion(matches)
    }
    return .success(chosen.sorted())
  }

  private func offer(_ query: String?, command: String) async -> IncomingOffer? {
    let offers = await session.pendingOffers
    guard let id = pick(query, among: offers.map(\.id), what: "offer", command: command) else { return nil }
    return offers.first { $0.id == id }
  }

  /// The one id `query` names (4+ hex digits of it), or the only one when there is no query.
  private func pick(_ query: String?, among ids: [TransferID], what: String, command: String) -> TransferID? {
    guard let query else {
      if ids.count == 1 { return ids[0] }
      output.show(
        .error(
          ids.isEmpty
            ? "no \(what) is waiting" : "\(ids.count) \(what)s: say which, \(command) ID (\(ids.map(\.shortHex).joined(separator: ", ")))"))
      return nil
    }
    let lowered = query.lowercased()
    guard lowered.count >= 4, lowered.allSatisfy(\.isHexDigit) else {
      output.show(.error("\(command) takes 4 or more hex digits of the \(what)'s id, not '\(EventFormatter.sanitize(query))'"))
      return nil
    }
    let matches = ids.filter { $0.hex.hasPrefix(lowered) }
    switch matches.count {
    case 1: return matches[0]
    case 0:
      output.show(
        .error("no \(what) \(EventFormatter.sanitize(query))" + (ids.isEmpty ? "" : " (there is \(ids.map(\.shortHex).joined(separator: ", ")))")))
      return nil
    default:
      output.show(.error("'\(EventFormatter.sanitize(query))' is ambiguous: give more digits"))
      return nil
    }
  }

  /// `~/x` as `$HOME/x`.
  static func expandingHome(_ path: String) -> String {
    guard path == "~" || path.hasPrefix("~/"), let home = getenv("HOME").map({ String(cString: $0) }) else { return path }
    return home + path.dropFirst()
  }
}
