import Dispatch
import NearbyCore

#if canImport(Glibc)
  import Glibc
#endif

/// Files and folders to and from peers (PROTOCOL.md section 13): offers the receiver
/// accepts or refuses, chunks that share the connection with messages, a BLAKE2b check of
/// every file, `.part` files renamed once checked, and transfers that resume where they
/// stopped after a lost connection or a restart with the same state directory.
extension NearbySession {
  /// Offers files and folders to a peer — MultipeerConnectivity's
  /// `sendResource(at:withName:toPeer:withCompletionHandler:)`, for many files at once.
  ///
  /// The peer sees a `TransferEvent.offer(_:)` and accepts or refuses it; the transfer then
  /// runs by itself (``OutgoingTransfer/progress``, ``OutgoingTransfer/result()``), through
  /// a relay too (sealed end to end), and resumes when the connection comes back. The same
  /// paths to the same peer while an earlier offer of them is unfinished (also one from
  /// before a restart) give that transfer back instead of a new one.
  /// - Parameters:
  ///   - paths: files and folders; a folder is sent with everything below it (symbolic
  ///     links, devices and the like are left out: ``OutgoingTransfer/skipped``).
  ///   - peer: a connected peer, one reached through a relay, or one whose session is
  ///     reconnecting (the offer goes out when it is back).
  /// - Returns: the transfer, once the offer is on its way.
  /// - Throws: ``TransferError`` when the peer cannot be reached or does not take files, or a
  ///   path cannot be sent.
  public func sendFiles(at paths: [String], to peer: PeerID) async throws(TransferError) -> OutgoingTransfer {
    guard state == .running, !shutdownRequested else { throw .notRunning }
    // A peer whose session is reconnecting gets the offer when the session is back, as
    // transfers under way resume then (refusing it was "not connected" during a blip).
    if case .failure(let error) = machine.transferRoute(to: peer), !machine.isSuspended(peer) { throw .peerUnavailable(error.description) }
    let arguments = paths.map(OfferBuilder.absolutePath)
    if let existing = files.outgoing.values.first(where: { $0.peer.id == peer && !$0.state.isFinished && $0.record.arguments == arguments }) {
      return existing.handle
    }
    let id = transferTuning.transferID ?? TransferID.random()
    let queue = FileTransfers.queue(id)
    let built: Result<OfferBuilder.Offer, TransferError> = await withCheckedContinuation { continuation in
      queue.async { continuation.resume(returning: OfferBuilder.build(arguments)) }
    }
    let offer = try built.get()
    guard state == .running, !shutdownRequested else { throw .notRunning }
    guard let known = machine.peer(peer) else { throw .peerUnavailable("\(peer.shortHex) went away") }
    let record = TransferStore.Record(
      id: id, direction: .send, peer: peer, files: offer.files, sources: offer.items, arguments: arguments)
    startOutgoing(id: id, peer: known, files: offer.files, items: offer.items, skipped: offer.skipped, record: record, queue: queue)
    persist(record, on: queue)
    return files.outgoing[id]!.handle
  }

  /// Offers waiting for an answer, oldest first.
  public var pendingOffers: [IncomingOffer] {
    files.incoming.values.filter { $0.state.phase == .asking }.sorted { $0.arrived < $1.arrived }.map {
      IncomingOffer(id: $0.state.id, from: $0.peer, files: $0.state.files, responder: SessionOfferResponder(self))
    }
  }

  /// Every transfer that is not over, ours and theirs.
  public var transfers: [TransferStatus] {
    var result: [TransferStatus] = []
    for (id, transfer) in files.outgoing {
      let phase: TransferStatus.Phase =
        switch transfer.state.phase {
        case .offered: .offered
        case .sending: transfer.state.paused ? .paused : .active
        case .finished: .active
        }
      result.append(TransferStatus(progress: outgoingProgress(id, rate: 0), phase: phase))
    }
    for (id, transfer) in files.incoming {
      let phase: TransferStatus.Phase =
        switch transfer.state.phase {
        case .asking: .asking
        case .preparing, .receiving, .finished: machine.transferRoute(to: transfer.peer.id).isSuccess ? .active : .paused
        }
      result.append(TransferStatus(progress: incomingProgress(id, rate: 0), phase: phase))
    }
    return result.sorted { $0.progress.id < $1.progress.id }
  }

  /// Cancels a transfer, either way: the other side is told (when it cannot be reached now,
  /// an outgoing one's CANCEL waits for it) and the receiver removes what it has not saved.
  public func cancelTransfer(_ id: TransferID) {
    if files.outgoing[id] != nil {
      var actions: [OutgoingTransferState.Action] = []
      files.outgoing[id]!.state.cancel("cancelled by \(configuration.peer.name.value)", into: &actions)
      performOutgoing(id, actions)
    } else if files.incoming[id] != nil {
      var actions: [IncomingTransferState.Action] = []
      files.incoming[id]!.state.cancel("cancelled by \(configuration.peer.name.value)", into: &actions)
      performIncoming(id, actions)
    }
  }

  /// Whether the rules for invitations let an offer from `peer` be accepted without asking
  /// (a front end's "accept all files"): it is on the allow-list or verified, or the accept
  /// policy is `all`, or it is `ask` and we have a session with the peer (accepted or
  /// invited by the person). Never for `none` or `known` alone.
  public func acceptsFilesAutomatically(from peer: PeerID) -> Bool {
    let core = machine.configuration
    if core.allowList.contains(peer) || core.verifiedPeers.contains(peer) { return true }
    switch core.acceptPolicy {
    case .all: return true
    case .ask: return machine.isConnected(peer)
    case .none, .known: return false
    }
  }

  /// The usual download folder: `nearby` in `$XDG_DOWNLOAD_DIR` (or the one
  /// `~/.config/user-dirs.dirs` names), else `~/Downloads/nearby`.
  /// - Returns: `nil` without HOME.
  public nonisolated static func defaultDownloadsDirectory(environment: [String: String]) -> String? {
    if let xdg = environment["XDG_DOWNLOAD_DIR"], xdg.hasPrefix("/") { return xdg + "/nearby" }
    guard let home = environment["HOME"], home.hasPrefix("/") else { return nil }
    let config = environment["XDG_CONFIG_HOME"].flatMap { $0.hasPrefix("/") ? $0 : nil } ?? home + "/.config"
    if let text = readSmallFile(config + "/user-dirs.dirs") {
      for line in text.split(separator: "\n") where line.hasPrefix("XDG_DOWNLOAD_DIR=") {
        var value = line.dropFirst("XDG_DOWNLOAD_DIR=".count)
        if value.hasPrefix("\""), value.hasSuffix("\""), value.count >= 2 { value = value.dropFirst().dropLast() }
        let path = String(value).replacing("$HOME", with: home)
        if path.hasPrefix("/"), path != home { return path + "/nearby" }
      }
    }
    return home + "/Downloads/nearby"
  }

  private nonisolated static func readSmallFile(_ path: String) -> String? {
    let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    var buffer = [UInt8](repeating: 0, count: 16_384)
    let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
    return count > 0 ? String(decoding: buffer[0..<count], as: UTF8.self) : nil
  }
}

/// How a session answers offers of files.
public enum FileAcceptPolicy: String, Hashable, Sendable, CaseIterable {
  /// Report each offer (`TransferEvent.offer(_:)`) and let the person or program answer.
  case ask
  /// Accept offers into ``SessionConfiguration/downloadsDirectory`` from peers the rules for
  /// invitations accept without asking (``NearbySession/acceptsFilesAutomatically(from:)``);
  /// ask about the others.
  case all
  /// Refuse every offer.
  case none
}

/// A transfer that is not over, for a list (`/transfers`).
public struct TransferStatus: Hashable, Sendable {
  public enum Phase: String, Hashable, Sendable {
    /// Ours, waiting for the receiver's answer.
    case offered
    /// Theirs, waiting for ours.
    case asking
    case active
    /// The peer cannot be reached: it resumes when it can.
    case paused
  }
  public let progress: TransferProgress
  public let phase: Phase
}

extension Result {
  var isSuccess: Bool { if case .success = self { true } else { false } }
}
