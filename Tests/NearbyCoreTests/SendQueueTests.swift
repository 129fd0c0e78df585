import NearbyCore
import Testing

/// The send side of a connection, without sockets: one flush per batch, frames waiting for
/// the handshake, the limit and the writable report, and both ways of closing; then random
/// runs against a model that counts every byte.
@Suite("Send queue (state machine)")
struct SendQueueTests {
  /// Plays the connection: takes a batch once everything taken before is written, "seals"
  /// it (adding `overhead` bytes per record), and writes what it is told to. (A class: a
  /// mutating call cannot be written inside `#expect`.)
  final class Writer {
    var queue: SendQueue
    /// Sealed bytes taken and not yet written.
    var unwritten = 0
    /// Every plaintext byte taken for sealing, in order.
    var taken: [UInt8] = []
    var closeRecords = 0
    var shutDowns = 0
    let overhead = 17

    init(limit: Int) { queue = SendQueue(limit: limit) }

    /// Takes the next batch if nothing is unwritten. - Returns: the batch (`nil`: still writing).
    func takeNext(canSeal: Bool = true, handshakeFailed: Bool = false) -> SendQueue.Batch? {
      guard unwritten == 0 else { return nil }
      var buffer: [UInt8] = []
      let batch = queue.nextBatch(canSeal: canSeal, handshakeFailed: handshakeFailed, swappingWith: &buffer)
      switch batch {
      case .seal:
        taken += buffer
        queue.sealed(plaintextCount: buffer.count, sealedCount: buffer.count + overhead)
        unwritten = buffer.count + overhead
      case .closeRecord:
        closeRecords += 1
        queue.sealed(plaintextCount: 0, sealedCount: overhead)
        unwritten = overhead
      case .shutDown: shutDowns += 1
      case .idle: break
      }
      return batch
    }

    /// Writes `count` sealed bytes (at most what is unwritten). - Returns: whether writable was reported.
    func write(_ count: Int) -> Bool {
      let count = min(count, unwritten)
      unwritten -= count
      return queue.wrote(count)
    }

    func close(_ mode: CloseAction) -> SendQueue.CloseStep? { queue.close(mode) }
    /// The socket closed: nothing more is written.
    func socketClosed() {
      queue.closed()
      unwritten = 0
    }
    func notifyWhenWritable() -> Bool { queue.notifyWhenWritable() }
    func notifyWhenQueued(below threshold: Int) -> Bool { queue.notifyWhenQueued(below: threshold) }

    func enqueue(_ bytes: [UInt8], limit: Int? = nil) -> SendQueue.EnqueueResult {
      queue.enqueue(limit: limit ?? queue.limit) { $0 += bytes }
    }
  }

  @Test func framesQueuedBeforeAFlushGoInOneBatch() {
    let writer = Writer(limit: 1000)
    #expect(writer.enqueue([1, 2]) == .queued(scheduleFlush: true))
    #expect(writer.enqueue([3]) == .queued(scheduleFlush: false), "a flush is on its way")
    #expect(writer.queue.queuedBytes == 3)
    #expect(writer.takeNext() == .seal)
    #expect(writer.taken == [1, 2, 3])
    #expect(writer.queue.queuedBytes == 3 + writer.overhead, "the sealed bytes count")
    // Queued while the batch is written: picked up by the same flush.
    #expect(writer.enqueue([4]) == .queued(scheduleFlush: false))
    _ = writer.write(.max)
    #expect(writer.takeNext() == .seal)
    _ = writer.write(.max)
    #expect(writer.takeNext() == .idle)
    #expect(writer.queue.queuedBytes == 0)
    #expect(writer.taken == [1, 2, 3, 4])
    #expect(writer.enqueue([5]) == .queued(scheduleFlush: true), "the flush ended: a new one is needed")
  }

  @Test func framesWaitForTheHandshake() {
    let writer = Writer(limit: 1000)
    #expect(writer.enqueue([1]) == .queued(scheduleFlush: true))
    #expect(writer.takeNext(canSeal: false) == .idle, "nothing goes out in plaintext")
    #expect(writer.taken.isEmpty)
    #expect(writer.enqueue([2]) == .queued(scheduleFlush: true))
    #expect(writer.takeNext(canSeal: true) == .seal)
    #expect(writer.taken == [1, 2])
  }

  @Test func aFullQueueRefusesThenReportsWritableOnceBelowHalf() {
    let writer = Writer(limit: 100)
    #expect(writer.enqueue(Array(repeating: 7, count: 60)) == .queued(scheduleFlush: true))
    #expect(writer.enqueue(Array(repeating: 8, count: 60)) == .queued(scheduleFlush: false), "the limit is checked before a frame")
    #expect(writer.enqueue([9]) == .full)
    #expect(writer.enqueue([9], limit: 200) == .queued(scheduleFlush: false), "a control frame's higher limit")
    #expect(writer.queue.queuedBytes == 121)
    #expect(writer.takeNext() == .seal)
    #expect(writer.queue.queuedBytes == 121 + writer.overhead)
    #expect(writer.write(80) == false, "\(writer.queue.queuedBytes) queued: not below 50")
    #expect(writer.write(8) == false)
    #expect(writer.write(1) == true, "49 queued: below half")
    #expect(writer.write(1) == false, "told once")
    #expect(writer.notifyWhenWritable() == false, "below half already")
  }

  @Test func askingToBeToldWhenWritable() {
    let writer = Writer(limit: 100)
    _ = writer.enqueue(Array(repeating: 1, count: 80))
    #expect(writer.notifyWhenWritable())
    #expect(writer.takeNext() == .seal)
    #expect(writer.write(writer.unwritten - 50) == false)
    #expect(writer.write(1) == true)
  }

  @Test func aLowWaterMark() {
    let writer = Writer(limit: 1000)
    _ = writer.enqueue(Array(repeating: 1, count: 300))
    #expect(writer.notifyWhenQueued(below: 100))
    #expect(writer.notifyWhenQueued(below: 50), "the higher mark is kept")
    #expect(writer.notifyWhenQueued(below: 400) == false, "already below")
    #expect(writer.takeNext() == .seal)
    #expect(writer.write(writer.unwritten - 100) == false)
    #expect(writer.write(1) == true, "99 queued: below the higher mark")
    #expect(writer.write(90) == false, "told once")
  }

  @Test func lingeringWritesEverythingQueuedThenTheCloseRecordThenShutsDown() {
    let writer = Writer(limit: 1000)
    _ = writer.enqueue([1, 2, 3])
    #expect(writer.takeNext() == .seal)
    _ = writer.enqueue([4])
    #expect(writer.close(.shutdownAndLinger) == .flushAndLinger)
    #expect(writer.close(.shutdownAndLinger) == nil, "asked once")
    #expect(writer.enqueue([5]) == .closed)
    #expect(writer.enqueue([5], limit: .max) == .closed, "whatever the limit")
    #expect(writer.notifyWhenWritable() == false)
    #expect(writer.takeNext() == nil, "the first batch is still being written")
    _ = writer.write(.max)
    #expect(writer.takeNext() == .seal)
    #expect(writer.taken == [1, 2, 3, 4])
    _ = writer.write(.max)
    #expect(writer.takeNext() == .closeRecord)
    #expect(writer.queue.queuedBytes == writer.overhead)
    _ = writer.write(.max)
    #expect(writer.takeNext() == .shutDown)
    #expect(writer.takeNext() == .idle, "shut down once")
    #expect(writer.closeRecords == 1 && writer.shutDowns == 1)
    #expect(writer.close(.now) == .closeNow)
    #expect(writer.close(.now) == nil)
  }

  @Test func aFailedHandshakeShutsDownWithoutACloseRecord() {
    let writer = Writer(limit: 1000)
    _ = writer.enqueue([1])
    #expect(writer.close(.shutdownAndLinger) == .flushAndLinger)
    #expect(writer.takeNext(canSeal: false, handshakeFailed: false) == .idle, "the handshake may still complete")
    #expect(writer.takeNext(canSeal: false, handshakeFailed: true) == .shutDown)
    #expect(writer.taken.isEmpty && writer.closeRecords == 0)
  }

  /// Closing now refuses frames at once; the connection may still write what it took (the
  /// socket closes in a later job of the loop), and the counts stay right until it does.
  /// (Counts zeroed at the request made that write trap in `wrote`.)
  @Test func closingNowRefusesAtOnceAndDropsEverythingWhenTheSocketCloses() {
    let writer = Writer(limit: 1000)
    _ = writer.enqueue(Array(repeating: 1, count: 500))
    #expect(writer.takeNext() == .seal)
    _ = writer.enqueue(Array(repeating: 2, count: 100))
    #expect(writer.notifyWhenQueued(below: 10))
    #expect(writer.close(.now) == .closeNow)
    #expect(writer.queue.refusesFrames)
    #expect(writer.enqueue([1]) == .closed)
    #expect(writer.close(.shutdownAndLinger) == nil)
    #expect(writer.close(.now) == nil)
    // The write in between: counted, and no report (nobody waits on a closed connection).
    #expect(writer.write(300) == false)
    #expect(writer.queue.queuedBytes == 600 + writer.overhead - 300)
    _ = writer.write(.max)
    #expect(writer.takeNext() == .seal, "queued before the close: it may still go")
    #expect(writer.queue.queuedBytes == 100 + writer.overhead)
    // The socket closes: everything is dropped.
    writer.socketClosed()
    #expect(writer.queue.queuedBytes == 0)
    #expect(writer.queue.plaintext.isEmpty)
    #expect(writer.takeNext() == .idle)
    #expect(writer.enqueue([1]) == .closed)
  }

  /// Random enqueues (three limits), partial writes, requests to be told, and a close at
  /// some point, against a model: every byte queued comes out once and in order (all of
  /// them, when lingering), ``SendQueue/queuedBytes`` is what the model counts, nothing is
  /// accepted at or over its limit, a flush is always on its way while bytes wait, and
  /// writable is told exactly when the model says.
  @Test(arguments: 0..<40) func randomRunsAgreeWithTheModel(seed: UInt64) {
    var random = SeededGenerator(seed: seed)
    let limit = Int.random(in: 64...4096, using: &random)
    let writer = Writer(limit: limit)
    var accepted: [UInt8] = []
    var next: UInt8 = 0
    var flushPending = false
    var toldBelowHalf = false  // a refusal or a request is waiting to be told
    var lowWater = 0
    var closing = false
    var closedNow = false
    var socketClosed = false
    var checked = 0  // bytes of `taken` compared with `accepted` so far
    for _ in 0..<2000 {
      switch Int.random(in: 0..<100, using: &random) {
      case 0..<45:
        let count = Int.random(in: 1...(limit / 3), using: &random)
        let bytes = (0..<count).map { _ in
          next &+= 1
          return next
        }
        let kind = Int.random(in: 0..<10, using: &random)
        let frameLimit = kind == 0 ? Int.max : kind == 1 ? 2 * limit : limit
        let before = writer.queue.queuedBytes
        let result = writer.enqueue(bytes, limit: frameLimit)
        if closing || closedNow {
          #expect(result == .closed)
        } else if before >= frameLimit {
          #expect(result == .full)
          toldBelowHalf = true
        } else {
          #expect(result == .queued(scheduleFlush: !flushPending))
          flushPending = true
          accepted += bytes
        }
      case 45..<75:
        let before = writer.queue.queuedBytes
        let took = writer.takeNext()
        if took != nil && took != .seal { flushPending = false }
        if took == .seal { #expect(flushPending, "bytes were taken that no flush was asked for") }
        if took == .closeRecord || took == .shutDown { #expect(closing) }
        if took == .idle { #expect(writer.queue.plaintext.isEmpty) }
        if took == .seal { #expect(writer.queue.queuedBytes == before + writer.overhead) }
      case 75..<92:
        let count = Int.random(in: 0...limit, using: &random)
        let before = writer.queue.queuedBytes
        let written = min(count, writer.unwritten)
        let told = writer.write(count)
        let after = before - written
        var expected = false
        if toldBelowHalf && after < limit / 2 {
          expected = true
          toldBelowHalf = false
          lowWater = 0
        } else if lowWater > 0 && after < lowWater {
          expected = true
          lowWater = 0
        }
        #expect(told == expected, "seed \(seed): wrote \(written), \(before) → \(after) queued")
      case 92..<96:
        let asked = writer.notifyWhenWritable()
        let expected = !closing && !closedNow && writer.queue.queuedBytes >= limit / 2
        #expect(asked == expected)
        if asked { toldBelowHalf = true }
      case 96..<99:
        let threshold = Int.random(in: 1...limit, using: &random)
        let asked = writer.notifyWhenQueued(below: threshold)
        let expected = !closing && !closedNow && writer.queue.queuedBytes >= threshold
        #expect(asked == expected)
        if asked { lowWater = max(lowWater, threshold) }
      default:
        switch Int.random(in: 0..<3, using: &random) {
        case 0:
          let step = writer.close(.shutdownAndLinger)
          #expect(step == (closing || closedNow ? nil : .flushAndLinger))
          closing = closing || !closedNow
        case 1:
          #expect(writer.close(.now) == (closedNow ? nil : .closeNow))
          closedNow = true
          closing = false
          toldBelowHalf = false
          lowWater = 0
        default:
          // The socket closes (asked, or the peer closed it): everything goes.
          writer.socketClosed()
          socketClosed = true
          closedNow = true
          closing = false
          toldBelowHalf = false
          lowWater = 0
          flushPending = false
        }
      }
      // Invariants after every step.
      #expect(writer.queue.queuedBytes == writer.queue.plaintext.count + writer.unwritten, "seed \(seed)")
      #expect(writer.taken.count + writer.queue.plaintext.count <= accepted.count)
      if writer.taken.count > checked {
        #expect(writer.taken[checked...] == accepted[checked..<writer.taken.count], "seed \(seed): bytes out of order or lost")
        checked = writer.taken.count
      }
      if !writer.queue.plaintext.isEmpty { #expect(flushPending, "seed \(seed): bytes wait with no flush on its way") }
      if socketClosed { #expect(writer.queue.queuedBytes == 0 && writer.queue.plaintext.isEmpty) }
    }
    // Drain: when lingering, everything accepted goes out, then CLOSE and the shutdown.
    guard !closedNow else { return }
    if !closing { #expect(writer.close(.shutdownAndLinger) == .flushAndLinger) }
    var batches: [SendQueue.Batch] = writer.shutDowns > 0 ? [.closeRecord, .shutDown] : []  // shut down during the run
    while batches.last != .shutDown && batches.count < 10_000 {
      _ = writer.write(.max)
      if let batch = writer.takeNext() { batches.append(batch) }
    }
    #expect(writer.taken == accepted, "seed \(seed): everything accepted was sent")
    #expect(Array(batches.suffix(2)) == [.closeRecord, .shutDown])
    #expect(writer.closeRecords == 1 && writer.shutDowns == 1)
    #expect(writer.queue.queuedBytes == 0)
  }
}
