import Foundation
import NearbySystem
import Synchronization
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// The chat's output in line mode: written by a thread of its own through a bounded queue,
/// so a reader that stops reading blocks nobody and costs at most the queue.
@Suite("Queued output")
struct QueuedOutputTests {
  static func pipePair() -> (read: Int32, write: Int32) {
    var fds: [Int32] = [0, 0]
    _ = pipe(&fds)
    for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
    return (fds[0], fds[1])
  }

  /// Reads everything from `fd` until EOF, on a thread.
  static func readAll(_ fd: Int32) async -> [UInt8] {
    await withCheckedContinuation { continuation in
      Thread.detachNewThread {
        var data: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
          let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
          if count <= 0 { break }
          data += buffer[0..<count]
        }
        close(fd)
        continuation.resume(returning: data)
      }
    }
  }

  @Test func writesNeverBlockAndProducersWaitForRoomUntilTheReaderReads() async throws {
    let (readFD, writeFD) = Self.pipePair()
    let writer = OutputWriter(fd: writeFD, queueLimit: 4096)
    var expected = ""
    // Far more than the pipe holds (64 KiB), and nobody reads: each write returns at once.
    for index in 0..<200 {
      let line = "line \(index) " + String(repeating: "x", count: 1000)
      writer.line(line)
      expected += line + "\n"
    }
    #expect(writer.queuedBytes > 4096)
    let waited = Task {
      await writer.waitForRoom()
      return ContinuousClock.now
    }
    try await Task.sleep(for: .milliseconds(200))
    let readingStarted = ContinuousClock.now
    let reading = Task { await Self.readAll(readFD) }
    let roomAt = await waited.value
    #expect(roomAt >= readingStarted, "waitForRoom returned before anything was read")
    await writer.drain()
    #expect(writer.queuedBytes == 0)
    close(writeFD)
    #expect(String(decoding: await reading.value, as: UTF8.self) == expected)
  }

  @Test func drainGivesUpWhenTheReaderTakesNothing() async throws {
    let (readFD, writeFD) = Self.pipePair()
    let writer = OutputWriter(fd: writeFD, queueLimit: 1 << 20)
    writer.write(String(repeating: "y", count: 200_000))
    let started = ContinuousClock.now
    await writer.drain(stallLimit: .milliseconds(300))
    let took = ContinuousClock.now - started
    #expect(took >= .milliseconds(300))
    #expect(took < .seconds(30), "drain waited \(took) for a reader that takes nothing")
    #expect(writer.queuedBytes > 0)
    close(readFD)  // the writer thread then fails with EPIPE and drops the rest
    try await Task.sleep(for: .milliseconds(100))
    #expect(writer.queuedBytes == 0)
    close(writeFD)
  }

  @Test func aCancelledProducerStopsWaiting() async throws {
    let (readFD, writeFD) = Self.pipePair()
    let writer = OutputWriter(fd: writeFD, queueLimit: 1000)
    writer.write(String(repeating: "z", count: 100_000))
    let waiting = Task { await writer.waitForRoom() }
    try await Task.sleep(for: .milliseconds(100))
    waiting.cancel()
    await waiting.value
    close(readFD)
    try await Task.sleep(for: .milliseconds(50))
    close(writeFD)
  }
}
