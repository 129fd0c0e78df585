import Nearby
import NearbyDiscovery
import NearbyTransport

#if canImport(Glibc)
  import Glibc
#endif

extension BenchRunner {
  /// Advertiser start → `found` at a browser on another host, next to `avahi-publish` →
  /// `avahi-browse -r` between the same two hosts. Only inside the private-LAN harness (never
  /// on the machine's own network): inside `scripts/lan loopback`, it builds a two-host veth
  /// LAN with the harness; where it cannot, it measures on the one daemon it has.
  func discovery() async throws -> [BenchmarkResult] {
    guard getenv("NEARBY_AVAHI").map({ String(cString: $0) }) == "1", access("/run/avahi-daemon/socket", F_OK) == 0 else {
      progress("discovery: skipped (run inside scripts/lan loopback or nearby lab)")
      return []
    }
    let rounds = quick ? 2 : 5
    if let lan = getenv("NEARBY_LAN_SCRIPT").map({ String(cString: $0) }), getenv("NEARBY_LAN").map({ String(cString: $0) }) == "loopback",
      getuid() == 0, let executable = BenchRunner.executablePath()
    {
      progress("discovery: \(rounds) advertisements from one host to another of a veth LAN, ours and avahi's tools")
      return try await discoveryBetweenHosts(rounds: rounds, lan: lan, nearby: executable)
    }
    progress("discovery: \(rounds) advertisements on this host's daemon, ours and avahi's tools")
    return try await discoveryOnOneHost(rounds: rounds)
  }

  private func discoveryBetweenHosts(rounds: Int, lan: String, nearby: String) async throws -> [BenchmarkResult] {
    let id = "bench\(UInt16.random(in: 0...UInt16.max))"
    let up = try ChildProcess(lan, ["up", id, "adv,brw"], standardInput: .null, standardOutput: .descriptor(2), standardError: .inherit)
    guard await up.wait() == 0 else { throw BenchError("scripts/lan up \(id) failed") }
    var ours: [Duration] = []
    var theirs: [Duration] = []
    let clock = ContinuousClock()
    do {
      for round in 0..<rounds {
        // Ours: `nearby browse` on one host, `nearby relay` (an advertiser that needs no
        // terminal) started on the other.
        let type = "_bench\(round)x\(String(UInt16.random(in: 0...UInt16.max), radix: 16))._tcp"
        let found = try OutputPipe()
        let browse = try ChildProcess(
          lan, ["exec", id, "brw", "--", nearby, "browse", "--json", "--service", type], standardInput: .null,
          standardOutput: .descriptor(found.write), standardError: .null)
        found.closeWrite()
        try await Task.sleep(for: .seconds(1))
        let stateDirectory = "/tmp/nearby-bench-\(id)-\(round)"
        let start = clock.now
        let advertiser = try ChildProcess(
          lan, ["exec", id, "adv", "--", nearby, "relay", "--name", "bench\(round)", "--service", type, "--state-dir", stateDirectory],
          standardInput: .null, standardOutput: .null, standardError: .null)
        guard await found.waitForLine(startingWith: "{\"event\":\"found\"", within: .seconds(20)) else {
          throw BenchError("nearby browse on one host did not find the advertiser on the other within 20 s")
        }
        ours.append(clock.now - start)
        for child in [advertiser, browse] { child.terminate() }
        for child in [advertiser, browse] { _ = await child.wait() }

        let avahiType = "_avb\(round)x\(String(UInt16.random(in: 0...UInt16.max), radix: 16))._tcp"
        let resolved = try OutputPipe()
        let avahiBrowse = try ChildProcess(
          lan, ["exec", id, "brw", "--", "avahi-browse", "-rp", avahiType], standardInput: .null, standardOutput: .descriptor(resolved.write),
          standardError: .null)
        resolved.closeWrite()
        try await Task.sleep(for: .seconds(1))
        let publishStart = clock.now
        let publish = try ChildProcess(
          lan, ["exec", id, "adv", "--", "avahi-publish", "-s", "bench\(round)", avahiType, "9", "id=x"], standardInput: .null,
          standardOutput: .null, standardError: .null)
        guard await resolved.waitForLine(startingWith: "=", within: .seconds(20)) else {
          throw BenchError("avahi-browse on one host did not resolve avahi-publish on the other within 20 s")
        }
        theirs.append(clock.now - publishStart)
        for child in [publish, avahiBrowse] { child.terminate() }
        for child in [publish, avahiBrowse] { _ = await child.wait() }
      }
    } catch {
      _ = await (try? ChildProcess(lan, ["down", id], standardInput: .null, standardOutput: .null, standardError: .inherit))?.wait()
      throw error
    }
    let down = try ChildProcess(lan, ["down", id], standardInput: .null, standardOutput: .null, standardError: .inherit)
    _ = await down.wait()
    return discoveryResult(ours, theirs, figure: "advertise → found on another host (resolved), p50")
  }

  private func discoveryOnOneHost(rounds: Int) async throws -> [BenchmarkResult] {
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
      _ = await pipe.waitForLine(startingWith: "=", within: .seconds(20))
      theirs.append(clock.now - publishStart)
      publish.terminate()
      browse.terminate()
      _ = await publish.wait()
      _ = await browse.wait()
    }
    await loop.shutdown()
    return discoveryResult(ours, theirs, figure: "advertise → found on the same host (resolved), p50")
  }

  private func discoveryResult(_ ours: [Duration], _ theirs: [Duration], figure: String) -> [BenchmarkResult] {
    let median = { (values: [Duration]) in Percentiles(values).p50.microseconds / 1000 }
    return [
      BenchmarkResult(
        name: "discovery", figure: figure, unit: "ms", ours: median(ours), baseline: median(theirs),
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

  /// Reads lines until one starts with `prefix` (true), or until end of file or `timeout`
  /// (false); then closes the read end. On a thread of its own: the reads block.
  func waitForLine(startingWith prefix: String, within timeout: Duration) async -> Bool {
    let fd = read
    let deadline = ContinuousClock.now + timeout
    return await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
      let thread = Thread {
        var line: [UInt8] = []
        var byte: UInt8 = 0
        var matched = false
        reading: while true {
          let left = deadline - ContinuousClock.now
          guard left > .zero else { break }
          var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
          let ready = poll(&entry, 1, Int32(left / .milliseconds(1)) + 1)
          if ready < 0 && errno == EINTR { continue }
          guard ready > 0, Glibc.read(fd, &byte, 1) == 1 else {
            if ready == 0 { continue }
            break
          }
          if byte == 10 {
            if String(decoding: line, as: UTF8.self).hasPrefix(prefix) {
              matched = true
              break reading
            }
            line.removeAll()
          } else {
            line.append(byte)
          }
        }
        close(fd)
        continuation.resume(returning: matched)
      }
      thread.start()
    }
  }
}
