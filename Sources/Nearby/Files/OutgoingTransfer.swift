import NearbyCore
import Synchronization

/// Files we offered to a peer (``NearbySession/sendFiles(at:to:)``), like the `Progress` of
/// MultipeerConnectivity's `sendResource(at:withName:toPeer:)`: follow ``progress``, wait for
/// ``result()``, or ``cancel()``.
///
/// The transfer lives in the session, not in this object: it goes on (and resumes after a
/// lost connection, or a restart with the same state directory) whether or not anyone holds
/// it.
public final class OutgoingTransfer: Sendable {
  public let id: TransferID
  public let peer: Peer
  public let files: [OfferedFile]
  /// What was left out of the folders given: symbolic links, devices, fifos, sockets.
  public let skipped: [String]
  /// Progress as the receiver acknowledges bytes (the newest only, when nobody reads for a
  /// while); it ends when the transfer does. One consumer.
  public let progress: AsyncStream<TransferProgress>
  private let continuation: AsyncStream<TransferProgress>.Continuation
  private let outcome = Mutex<(end: TransferEnd?, stopped: Bool, waiters: [CheckedContinuation<TransferEnd?, Never>])>((nil, false, []))
  // Set once in init and only read afterwards. (Not `weak let`: with Swift 6.3.1, releasing
  // an object with a `weak let` corrupted memory in these tests.)
  private nonisolated(unsafe) weak var session: NearbySession?

  init(id: TransferID, peer: Peer, files: [OfferedFile], skipped: [String], session: NearbySession) {
    self.id = id
    self.peer = peer
    self.files = files
    self.skipped = skipped
    self.session = session
    (progress, continuation) = AsyncStream.makeStream(of: TransferProgress.self, bufferingPolicy: .bufferingNewest(1))
  }

  /// The bytes of every file offered.
  public var totalSize: UInt64 { files.reduce(0) { $0 + $1.size } }

  /// Waits for the end of the transfer.
  /// - Returns: how it ended, or `nil` when the session stopped first (the transfer resumes
  ///   when a session with the same state directory meets the peer again).
  public func result() async -> TransferEnd? {
    await withCheckedContinuation { (waiter: CheckedContinuation<TransferEnd?, Never>) in
      let now = outcome.withLock { state -> (TransferEnd?, Bool) in
        if state.end != nil || state.stopped { return (state.end, true) }
        state.waiters.append(waiter)
        return (nil, false)
      }
      if now.1 { waiter.resume(returning: now.0) }
    }
  }

  /// Cancels it: the receiver is told (at once, or when it can be reached again) and removes
  /// what it has not saved yet.
  public func cancel() async { await session?.cancelTransfer(id) }

  func report(_ progress: TransferProgress) { continuation.yield(progress) }

  /// The transfer ended (`end`), or the session stopped (`nil`).
  func finish(_ end: TransferEnd?) {
    let waiters = outcome.withLock { state -> [CheckedContinuation<TransferEnd?, Never>] in
      if end != nil { state.end = end } else { state.stopped = true }
      defer { state.waiters = [] }
      return state.waiters
    }
    for waiter in waiters { waiter.resume(returning: end) }
    continuation.finish()
  }
}

/// Accepting and refusing offers on behalf of the session that received them.
final class SessionOfferResponder: OfferResponder {
  // Set once in init and only read afterwards. (Not `weak let`: with Swift 6.3.1, releasing
  // an object with a `weak let` corrupted memory in these tests.)
  private nonisolated(unsafe) weak var session: NearbySession?

  let downloads: String?

  init(_ session: NearbySession) {
    self.session = session
    downloads = session.configuration.downloadsDirectory
  }

  func accept(_ id: TransferID, files: Set<Int>?, into directory: String) async throws(TransferError) {
    guard let session else { throw .notRunning }
    try await session.acceptOffer(id, files: files, into: directory)
  }

  func refuse(_ id: TransferID) async { await session?.refuseOffer(id) }
}
