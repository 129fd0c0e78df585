import Nearby
import NearbyDiscovery
import NearbyTransport

#if canImport(Glibc)
  import Glibc
#endif

extension BenchRunner {
  /// Advertiser start → `found` at a browser, next to `avahi-publish` → `avahi-browse -r`
  /// resolving it, on the same daemon. Only inside the private-LAN harness (never on the
  /// machine's own network).
  func discovery() async throws -> [BenchmarkResult] {
    guard getenv("NEARBY_AVAHI").map({ String(cString: $0) }) == "1", access("/run/avahi-daemon/socket", F_OK) == 0 else {
      progress("discovery: skipped (run inside scripts/lan loopback or nearby lab)")
      return []
    }
    let rounds = quick ? 2 : 5
    progress("discovery: \(rounds) advertisements, ours and avahi's tools")
    let loop = try EventLoop()
    var ours: [Duration] = []
    var theirs: [Duration] = []
    let clock = ContinuousClock()
    for round in 0..<rounds {
      let type = try ServiceType("bench\(round)x\(UInt16.random(in: 0...UInt16.max))")
      let browser = Browser(serviceType: type, loop: loop)
      browser.start()
      try await Task.sleep(for: .milliseconds(300))
      let advertiser = try Advertiser(
        advertisement: PeerAdvertisement(peer: Peer(id: PeerID.random(), name: try DisplayName("bench\(round)"))), serviceType: type, port: 9,
        loop: loop)
      let start = clock.now
      advertiser.start()
      for await event in browser.events {
        if case .found = event { break }
      }
      ours.append(clock.now - start)
      advertiser.finish()
      browser.finish()

      let avahiType = "_avb\(round)x\(UInt16.random(in: 0...UInt16.max))._tcp"
      let pipe = try OutputPipe()
      let browse = try ChildProcess(
        "avahi-browse", ["-rp", avahiType], standardInput: .null, standardOutput: .descriptor(pipe.write), standardError: .null)
      pipe.closeWrite()
      try await Task.sleep(for: .milliseconds(300))
      let publishStart = clock.now
      let publish = try ChildProcess(
        "avahi-publish", ["-s", "bench\(round)", avahiType, "9", "id=x"], standardInput: .null, standardOutput: .null, standardError: .null)
      await pipe.waitForLine(startingWith: "=")
      theirs.append(clock.now - publishStart)
      publish.terminate()
      browse.terminate()
      _ = await publish.wait()
      _ = await browse.wait()
    }
    await loop.shutdown()
    let median = { (values: [Duration]) in Percentiles(values).p50.microseconds / 1000 }
    return [
      BenchmarkResult(
        name: "discovery", figure: "advertise → found (resolved), p50", unit: "ms", ours: median(ours), baseline: median(theirs),
        baselineName: "avahi-publish → avahi-browse -r", higherIsBetter: false)
    ]
  }
}

/// A pipe read on a thread of its own until a line with a prefix appears.
final class OutputPipe: @unchecked Sendable {
  let read: Int32
  let write: Int32

  init() throws {
    var fds: [Int32] = [0, 0]
    guard pipe(&fds) == 0 else { throw BenchError("pipe failed") }
    read = fds[0]
    write = fds[1]
  }

  func closeWrite() { close(write) }

  func waitForLine(startingWith prefix: String) async {
    let fd = read
    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
      let thread = Thread {
        var line: [UInt8] = []
        var byte: UInt8 = 0
        while Glibc.read(fd, &byte, 1) == 1 {
          if byte == 10 {
            if String(decoding: line, as: UTF8.self).hasPrefix(prefix) { break }
            line.removeAll()
          } else {
            line.append(byte)
          }
        }
        close(fd)
        continuation.resume()
      }
      thread.start()
    }
  }
}
