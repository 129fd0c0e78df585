import Dispatch
import NearbyCore

/// The file transfers of a session: everything here is touched only on the session's I/O
/// thread (the actor's executor); file work happens on each transfer's own serial queue.
struct FileTransfers {
  var outgoing: [TransferID: Outgoing] = [:]
  var incoming: [TransferID: Incoming] = [:]
  /// Receiver: transfers that ended, with how (a new OFFER of one is answered, not asked);
  /// the latest few thousand.
  var closed = ClosedTransfers()
  /// Sender: cancelled transfers whose receiver could not be told yet.
  var cancelOwed: [TransferID: PeerID] = [:]
  /// Sender: counts the times a drained queue was shared out (whose turn is first).
  var turn: UInt64 = 0
  /// Receiver: new offers each peer, and each connection that carries offers (a relay's
  /// carries those of many peers), may still make (``TransferTuning/offerBurst``).
  var offerAllowance: [OfferSource: TokenBucket] = [:]

  enum OfferSource: Hashable {
    case peer(PeerID)
    case carrier(ConnectionID)
  }
  /// Receiver: transfers of an earlier run, resumed when their sender offers them again.
  var restored: [TransferID: TransferStore.Record] = [:]
  var store: TransferStore?
  /// Records have been read (frames that arrive earlier wait in ``pending``).
  var loaded = false
  var pending: [(TransferFrame, PeerID, ConnectionID)] = []
  /// What ``pending`` holds, about, in bytes (see ``pendingLimit``).
  var pendingBytes = 0
  /// What waits for the records at most: 1 024 frames and 16 MiB (FILE frames are up to
  /// 1 MiB: a gigabyte could wait while a slow disk gave the records). The rest is dropped;
  /// its sender finds out as for a frame lost through a relay (no ACK, then a RESEND or a
  /// resume).
  static let pendingLimit = (frames: 1024, bytes: 16 << 20)
  var timer: UInt64?
  var stopped = false
  /// ``SessionConfiguration/maximumFileRate``: bytes that may go now, and when they were counted.
  var allowance: Double = 0
  var allowanceAt: Duration = .zero
  var rateTimer: UInt64?

  /// One of our offers.
  struct Outgoing {
    var state: OutgoingTransferState
    var peer: Peer
    let queue: DispatchQueue
    let source: FileSource
    let handle: OutgoingTransfer
    var record: TransferStore.Record
    /// Reads: the generation counts rewinds (a read of an older one is stale).
    var generation: UInt64 = 0
    var ready: [ReadChunk] = []
    var readsInFlight = 0
    var readIndex = -1
    var readOffset: UInt64 = 0
    /// The read that ends the current file has been asked for.
    var readDone = true
    var relayed = false
    /// What the OFFER says when a test makes the sender lie (sizes, names); else the files.
    var offered: [OfferedFile]?
    var corrupted: Set<Int> = []
    var meter = ProgressMeter()
    var hashes: [Int: [UInt8]] = [:]
  }

  /// A chunk read ahead of the socket.
  struct ReadChunk {
    var index: Int
    var offset: UInt64
    var data: [UInt8]
    /// The file's hash, when this chunk ends it.
    var hash: [UInt8]?
  }

  /// An offer to us.
  struct Incoming {
    var state: IncomingTransferState
    var peer: Peer
    let queue: DispatchQueue
    /// Set once the files are set up; used only on ``queue``.
    var sink: FileSink?
    /// Where each file goes below the download folder.
    var paths: [[String]]
    var downloads: String?
    var record: TransferStore.Record
    var meter = ProgressMeter()
    var saved: [Int: TransferredFile] = [:]
    /// When the offer came (``NearbySession/pendingOffers`` oldest first).
    var arrived: Duration = .zero
  }

  static func queue(_ id: TransferID) -> DispatchQueue {
    DispatchQueue(label: "nearby-files-\(id.shortHex)")
  }

  var isIdle: Bool { outgoing.isEmpty && incoming.isEmpty }
}

/// Bytes per second over the last few seconds, and when progress was last reported.
struct ProgressMeter {
  private var samples: [(at: Duration, bytes: UInt64)] = []
  var lastReported: Duration?

  /// Notes `bytes` done at `now`. - Returns: the rate over the last 3 s.
  mutating func rate(at now: Duration, bytes: UInt64) -> UInt64 {
    if let last = samples.last, now - last.at < .milliseconds(100) {
      samples[samples.count - 1].bytes = bytes
    } else {
      samples.append((now, bytes))
    }
    while samples.count > 2, now - samples[1].at > .seconds(3) { samples.removeFirst() }
    guard let first = samples.first, now > first.at, bytes >= first.bytes else { return 0 }
    let seconds = Double((now - first.at).components.attoseconds) / 1e18 + Double((now - first.at).components.seconds)
    return seconds > 0.05 ? UInt64(Double(bytes - first.bytes) / seconds) : 0
  }
}
