import NearbyCore

/// How much a connection may cost the loop thread and its memory when it receives.
package struct ReceiveLimits: Sendable {
  /// The most bytes one connection reads per loop iteration: the rest waits for the next
  /// one, after every other connection had its turn.
  package var bytesPerTurn = 1 << 20
  /// The most frames one connection hands its owner per loop iteration, counted by their
  /// work (`Frame.receiveWork`: a large ROSTER counts as many frames).
  package var framesPerTurn = 1024
  /// Shared by the connections of one loop: the memory they may hold in frames that have not
  /// arrived completely. `nil`: no limit.
  package var budget: ReceiveBudget?

  /// Reads at most this many loop iterations apart count as back to back: a run of them
  /// keeps the read buffers until the connection is idle (see `TCPConnection.trimIfIdle()`);
  /// other reads that empty the socket free them at once.
  package var backToBackIterations: UInt64 = 16

  package init(bytesPerTurn: Int = 1 << 20, framesPerTurn: Int = 1024, budget: ReceiveBudget? = nil, backToBackIterations: UInt64 = 16) {
    self.bytesPerTurn = max(1, bytesPerTurn)
    self.framesPerTurn = max(1, framesPerTurn)
    self.budget = budget
    self.backToBackIterations = backToBackIterations
  }
}

/// The memory every connection of one event loop may hold in partially received frames and
/// records, together. A frame is buffered until its last byte arrives (up to 2 MiB each), so
/// peers that start large frames and finish none could make us hold a lot; above the budget,
/// the connections holding the most are closed (ERROR `resourceExhausted`) until the rest
/// fits.
///
/// Loop thread only: the connections update it after each read.
package final class ReceiveBudget: @unchecked Sendable {
  /// The most bytes held in partial frames across the loop's connections.
  package let maximumBytes: Int
  // The stored properties below are `@exclusivity(unchecked)`: only the loop thread uses them,
  // and the runtime's check of every access to a class's property was about a tenth of the
  // instructions of a message's round trip (callgrind; see the README's benchmarks).
  /// The bytes held now.
  @exclusivity(unchecked) package private(set) var heldBytes = 0
  /// The most bytes ever held at once (diagnostics, tests).
  @exclusivity(unchecked) package private(set) var peakBytes = 0
  /// Connections closed for holding too much.
  @exclusivity(unchecked) package private(set) var exhaustedConnections = 0
  @exclusivity(unchecked) private var holders: [ConnectionID: TCPConnection] = [:]

  /// - Parameter maximumBytes: at least one frame of the largest size
  ///   (``ProtocolLimits/maximumFrameLength``) and a record more, so any frame can arrive.
  package init(maximumBytes: Int) {
    self.maximumBytes = max(maximumBytes, ProtocolLimits.maximumFrameLength + 2 * 65_536)
  }

  /// A connection now holds `bytes` (it held `previous`). Over the budget, the largest
  /// holders are closed, possibly `connection` itself.
  func update(_ connection: TCPConnection, from previous: Int, to bytes: Int) {
    record(connection, from: previous, to: bytes)
    while heldBytes > maximumBytes, let largest = holders.values.max(by: { $0.heldPartialBytes < $1.heldPartialBytes }) {
      exhaustedConnections += 1
      let held = largest.heldPartialBytes
      let total = heldBytes
      record(largest, from: held, to: 0)
      largest.exhaustReceiveBudget(
        "it held \(held) bytes of frames it had not finished sending, the most of all connections, which together held \(total), more than the limit of \(maximumBytes)"
      )
    }
  }

  /// Accounts without enforcing.
  private func record(_ connection: TCPConnection, from previous: Int, to bytes: Int) {
    guard bytes != previous else { return }
    heldBytes += bytes - previous
    if bytes > 0 { holders[connection.id] = connection } else { holders[connection.id] = nil }
    connection.heldPartialBytes = bytes
    peakBytes = max(peakBytes, heldBytes)
  }
}
