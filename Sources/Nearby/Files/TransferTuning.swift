/// The numbers of file transfers (package-visible so that tests and benchmarks can change
/// them; the defaults are what PROTOCOL.md section 13 recommends).
package struct TransferTuning: Sendable {
  /// Bytes of file data per CHUNK. Small enough that a chat message queued behind one waits
  /// little, large enough that per-frame costs do not matter.
  package var chunkSize = 128 << 10
  /// Chunks read ahead of the socket, per transfer (2 MiB). The reading and hashing queue,
  /// the I/O threads and the receiver's writing queue share the CPUs: a deeper read-ahead
  /// keeps the reader busy while the others have the CPU (6 chunks gave 265–347 MB/s and 16
  /// gave 284–369 MB/s for a 1 GiB file on the 2-vCPU machine of README's benchmarks).
  package var readAhead = 16
  /// Unacknowledged CHUNK bytes on a direct session (bounds what a slow receiver holds).
  package var directWindow: UInt64 = 8 << 20
  /// The same through relays, below a relay's per-peer queue (4 MiB by default).
  package var relayedWindow: UInt64 = 2 << 20
  /// Bytes a connection's send queue may hold before transfers stop adding chunks to it:
  /// what a chat message queued after them waits behind, at most (plus one chunk).
  package var queueBudget = 512 << 10
  /// Through relays (chunks can be dropped there): an unacknowledged window this old is
  /// sent again from what the receiver has.
  package var stall: Duration = .seconds(5)
  /// Progress events, at most this often per transfer.
  package var progressInterval: Duration = .milliseconds(250)
  /// Offers waiting for an answer, and transfers going on, beyond which offers are refused
  /// (`busy`).
  package var maximumPendingOffers = 32
  package var maximumActiveTransfers = 64
  /// New offers one peer may make: this many at once, then `offersPerSecond`; beyond, they
  /// are refused (`busy`). A peer that offers and cancels in a loop frees its pending slot
  /// each time, so the limit above does not bound the events it makes.
  package var offerBurst = 32
  package var offersPerSecond = 2.0
  /// Events waiting for the slowest reader of the session's events beyond which new offers
  /// are refused (`busy`): an application that is behind is not handed more of them.
  package var offerEventBacklog = 1024

  /// Refuse an offer that does not fit the download folder's free space (off: tests of a
  /// disk that fills up during a transfer).
  package var checkFreeSpace = true

  // Faults for tests of a misbehaving sender (never set in a product).
  /// Flip a bit of the first chunk sent of each file (after hashing it): a corrupted chunk.
  package var corruptFirstChunk = false
  /// Offer every file as this many bytes larger (or smaller) than it is, and send what it
  /// really has: a lying size.
  package var misstateSizes: Int64 = 0
  /// Offer the files under these names (by index) instead of their own: hostile names.
  package var offeredNames: [String] = []
  /// Offer under this id instead of a random one: a peer playing with another's ids.
  package var transferID: TransferID? = nil

  package init() {}
}
