/// Which way a transfer goes, seen from here.
public enum TransferDirection: String, Hashable, Sendable {
  case send
  case receive
}

/// How a transfer ended.
public enum TransferEnd: Hashable, Sendable, CustomStringConvertible {
  /// Every accepted file was verified by the receiver (its BLAKE2b matched) and saved.
  case completed
  /// One side cancelled: `byPeer` when it was the other one.
  case cancelled(byPeer: Bool, message: String)
  /// It failed: refused, a size or hash mismatch, no space, a read or write error, ... The
  /// message says what happened and what to do.
  case failed(TransferCancelReason, String)

  public var description: String {
    switch self {
    case .completed: "completed"
    case .cancelled(let byPeer, let message):
      (byPeer ? "cancelled by the peer" : "cancelled") + (message.isEmpty ? "" : ": \(message)")
    case .failed(_, let message): message
    }
  }
}

/// Where a transfer stands, for progress bars.
public struct TransferProgress: Hashable, Sendable {
  public let id: TransferID
  public let peer: Peer
  public let direction: TransferDirection
  /// Bytes the receiver has written (for a sender: acknowledged by the receiver).
  public let bytes: UInt64
  /// Bytes of the accepted files (before an answer: of the whole offer).
  public let total: UInt64
  /// Bytes per second over the last seconds.
  public let rate: UInt64
  /// Files done and accepted.
  public let filesDone: Int
  public let fileCount: Int
  /// The file being transferred.
  public let currentFile: String?
  /// A sender's bytes of file data sent so far, those sent again after a break included (0 for
  /// a receiver): what a resume saved shows here.
  public let sent: UInt64

  package init(
    id: TransferID, peer: Peer, direction: TransferDirection, bytes: UInt64, total: UInt64, rate: UInt64, filesDone: Int, fileCount: Int,
    currentFile: String?, sent: UInt64 = 0
  ) {
    self.sent = sent
    self.id = id
    self.peer = peer
    self.direction = direction
    self.bytes = bytes
    self.total = total
    self.rate = rate
    self.filesDone = filesDone
    self.fileCount = fileCount
    self.currentFile = currentFile
  }

  /// The seconds left at the current rate, if it can be told.
  public var secondsLeft: UInt64? {
    guard rate > 0, total >= bytes else { return nil }
    return (total - bytes + rate - 1) / rate
  }
}

/// A file that arrived (or, for a sender, that the receiver verified).
public struct TransferredFile: Hashable, Sendable {
  /// The name in the offer.
  public let name: String
  /// Where it is: saved (receiver), or read from (sender).
  public let path: String
  public let size: UInt64
  /// BLAKE2b-256 in lowercase hex (`b2sum -l 256` prints the same).
  public let blake2b: String

  package init(name: String, path: String, size: UInt64, blake2b: String) {
    self.name = name
    self.path = path
    self.size = size
    self.blake2b = blake2b
  }
}

/// File-transfer news on the session's event stream.
public enum TransferEvent: Hashable, Sendable {
  /// A peer offers files: ``IncomingOffer/accept(into:)`` or ``IncomingOffer/refuse()``.
  case offer(IncomingOffer)
  /// A transfer started (ours was accepted, or we accepted one), or resumed.
  case started(TransferProgress)
  /// Progress, at most four times a second per transfer.
  case progress(TransferProgress)
  /// The transfer is over; `files` are those verified (all of them when it completed).
  case finished(id: TransferID, peer: Peer, direction: TransferDirection, end: TransferEnd, files: [TransferredFile])
}

/// What accepting or refusing an offer goes through (the session that received it).
package protocol OfferResponder: Sendable {
  /// Where ``IncomingOffer/accept()`` puts files.
  var downloads: String? { get }
  /// `files`: the indices of the wanted files (nil: all of them).
  func accept(_ id: TransferID, files: Set<Int>?, into directory: String) async throws(TransferError)
  func refuse(_ id: TransferID) async
}

/// Files a peer offers to send us.
public struct IncomingOffer: Hashable, Sendable {
  public let id: TransferID
  public let from: Peer
  public let files: [OfferedFile]
  let responder: (any OfferResponder)?

  package init(id: TransferID, from: Peer, files: [OfferedFile], responder: (any OfferResponder)?) {
    self.id = id
    self.from = from
    self.files = files
    self.responder = responder
  }

  /// The bytes of every file.
  public var totalSize: UInt64 { files.reduce(0) { $0 + $1.size } }

  /// Accepts every file, saved under `directory` (created if needed) as they arrive: as
  /// `NAME.part`, renamed once its hash checked out; never over an existing file.
  /// - Throws: ``TransferError`` when the offer is gone, the folder cannot be used, or there
  ///   is not enough free space (the sender is told).
  public func accept(into directory: String) async throws(TransferError) {
    guard let responder else { throw .notFound("the offer \(id.shortHex) is gone") }
    try await responder.accept(id, files: nil, into: directory)
  }

  /// Accepts only some of the files: `indices` are positions in ``files`` (from 0). The others
  /// are not sent; the transfer completes once the chosen ones are verified. Only the chosen
  /// files count towards the free-space check.
  /// - Throws: ``TransferError/notFound(_:)`` for an index outside ``files`` or an empty
  ///   choice (refuse the offer instead), and what ``accept(into:)`` throws.
  public func accept(only indices: some Sequence<Int>, into directory: String) async throws(TransferError) {
    guard let responder else { throw .notFound("the offer \(id.shortHex) is gone") }
    try await responder.accept(id, files: try chosen(indices), into: directory)
  }

  /// ``accept(only:into:)`` into the session's ``downloads`` folder.
  public func accept(only indices: some Sequence<Int>) async throws(TransferError) {
    guard let responder else { throw .notFound("the offer \(id.shortHex) is gone") }
    guard let directory = responder.downloads else {
      throw .downloads("no download folder is set: accept into a folder, or set SessionConfiguration.downloadsDirectory")
    }
    try await responder.accept(id, files: try chosen(indices), into: directory)
  }

  private func chosen(_ indices: some Sequence<Int>) throws(TransferError) -> Set<Int> {
    let set = Set(indices)
    if let outside = set.sorted().first(where: { !files.indices.contains($0) }) {
      throw .notFound("the offer \(id.shortHex) has no file \(outside): its files are 0 to \(files.count - 1)")
    }
    guard !set.isEmpty else { throw .notFound("no file of the offer \(id.shortHex) was chosen: choose at least one, or refuse the offer") }
    return set
  }

  /// Accepts every file into the session's ``downloads`` folder
  /// (`SessionConfiguration.downloadsDirectory`).
  /// - Throws: ``TransferError`` as ``accept(into:)`` does, and when the session has no
  ///   download folder.
  public func accept() async throws(TransferError) {
    guard let responder else { throw .notFound("the offer \(id.shortHex) is gone") }
    guard let directory = responder.downloads else {
      throw .downloads("no download folder is set: accept into a folder, or set SessionConfiguration.downloadsDirectory")
    }
    try await responder.accept(id, files: nil, into: directory)
  }

  /// Refuses the offer (the sender is told).
  public func refuse() async { await responder?.refuse(id) }

  public static func == (lhs: IncomingOffer, rhs: IncomingOffer) -> Bool {
    lhs.id == rhs.id && lhs.from == rhs.from && lhs.files == rhs.files
  }

  public func hash(into hasher: inout Hasher) {
    hasher.combine(id)
    hasher.combine(from)
  }
}

/// Why a transfer could not be started or answered.
public enum TransferError: Error, Hashable, Sendable, CustomStringConvertible {
  /// The peer cannot be reached, or does not take files.
  case peerUnavailable(String)
  /// A path cannot be sent (missing, unreadable, not a regular file or folder, ...).
  case unreadable(String)
  /// Too many files, names too long, ...
  case limit(String)
  /// No such transfer or offer (any more).
  case notFound(String)
  /// The download folder cannot be used.
  case downloads(String)
  /// Not enough free space for the offer.
  case noSpace(String)
  /// The session is not running.
  case notRunning

  public var description: String {
    switch self {
    case .peerUnavailable(let text), .unreadable(let text), .limit(let text), .notFound(let text), .downloads(let text), .noSpace(let text):
      text
    case .notRunning: "the session is not running"
    }
  }
}
