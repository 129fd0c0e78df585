import Nearby
import NearbySystem

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
    let advertising = CommandHost(lan: lan, id: id, host: "adv")
    let browsing = CommandHost(lan: lan, id: id, host: "brw")
    var ours: [Duration] = []
    var theirs: [Duration] = []
    do {
      for round in 0..<rounds {
        // Ours: `nearby browse` on one host, `nearby relay` (an advertiser that needs no
        // terminal) started on the other.
        let type = "_bench\(round)x\(String(UInt16.random(in: 0...UInt16.max), radix: 16))._tcp"
        ours.append(
          try await timeUntilFound(
            browse: browsing, [nearby, "browse", "--json", "--service", type], line: "{\"event\":\"found\"", publish: advertising,
            [nearby, "relay", "--name", "bench\(round)", "--service", type, "--state-dir", "/tmp/nearby-bench-\(id)-\(round)"]))
        theirs.append(try await avahiRound(round, browse: browsing, publish: advertising))
      }
    } catch {
      await advertising.down()
      throw error
    }
    await advertising.down()
    return discoveryResult(ours, theirs, figure: "advertise → found on another host (resolved), p50")
  }

  private func discoveryOnOneHost(rounds: Int) async throws -> [BenchmarkResult] {
    var ours: [Duration] = []
    var theirs: [Duration] = []
    let clock = ContinuousClock()
    for round in 0..<rounds {
      let type = try ServiceType("bench\(round)x\(UInt16.random(in: 0...UInt16.max))")
      let browser = NearbyBrowser(serviceType: type)
      let peer = Peer(id: PeerIdentity.ephemeral().peerID, name: try DisplayName("bench\(round)"))
      let advertiser = try NearbyAdvertiser(peer: peer, port: 9, serviceType: type)
      let elapsed = try await withThrowingTaskGroup(of: Void.self) { group -> Duration in
        var events = browser.events.makeAsyncIterator()
        group.addTask { try await browser.run() }
        try await Task.sleep(for: .milliseconds(300))
        let start = clock.now
        group.addTask { try await advertiser.run() }
        while let event = await events.next() {
          if case .found = event { break }
        }
        let elapsed = clock.now - start
        group.cancelAll()
        return elapsed
      }
      ours.append(elapsed)
      theirs.append(try await avahiRound(round, browse: CommandHost(), publish: CommandHost()))
    }
    return discoveryResult(ours, theirs, figure: "advertise → found on the same host (resolved), p50")
  }

  /// The baseline: `avahi-publish` started on one host → `avahi-browse -r` resolving it.
  private func avahiRound(_ round: Int, browse: CommandHost, publish: CommandHost) async throws -> Duration {
    let type = "_avb\(round)x\(String(UInt16.random(in: 0...UInt16.max), radix: 16))._tcp"
    return try await timeUntilFound(
      browse: browse, ["avahi-browse", "-rp", type], line: "=", publish: publish, ["avahi-publish", "-s", "bench\(round)", type, "9", "id=x"])
  }

  /// Starts a browsing command, gives it a second to start, then starts a publishing one.
  /// - Returns: the time from starting the publisher until the browser prints a line
  ///   starting with `line`.
  private func timeUntilFound(browse: CommandHost, _ browser: [String], line prefix: String, publish: CommandHost, _ publisher: [String])
    async throws -> Duration
  {
    var fds: [Int32] = [0, 0]
    guard pipe(&fds) == 0 else { throw BenchError("pipe failed: \(String(cString: strerror(errno)))") }
    let lines = LineReader.lines(fd: fds[0], closeAtEnd: true)
    let browsing = try browse.start(browser, standardOutput: .descriptor(fds[1]))
    close(fds[1])
    try await Task.sleep(for: .seconds(1))
    let clock = ContinuousClock()
    let start = clock.now
    let publishing = try publish.start(publisher, standardOutput: .null)
    let found = await withTaskGroup(of: Bool.self) { group in
      group.addTask {
        for await line in lines where line.hasPrefix(prefix) { return true }
        return false
      }
      group.addTask {
        try? await Task.sleep(for: .seconds(20))
        return false
      }
      let first = await group.next() ?? false
      group.cancelAll()
      return first
    }
    let elapsed = clock.now - start
    for child in [publishing, browsing] { child.terminate() }
    for child in [publishing, browsing] { _ = await child.wait() }
    guard found else { throw BenchError("\(browser[0]) did not see what \(publisher[0]) published within 20 s") }
    return elapsed
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

/// Where a benchmark command runs: here, or on a host of a LAN made with `scripts/lan up`.
struct CommandHost {
  var lan: String?
  var id = ""
  var host = ""

  func start(_ command: [String], standardOutput: ChildProcess.Stream) throws -> ChildProcess {
    guard let lan else {
      return try ChildProcess(command[0], Array(command.dropFirst()), standardInput: .null, standardOutput: standardOutput, standardError: .null)
    }
    return try ChildProcess(lan, ["exec", id, host, "--"] + command, standardInput: .null, standardOutput: standardOutput, standardError: .null)
  }

  /// Removes the LAN (everything running in it ends).
  func down() async {
    guard let lan, let remove = try? ChildProcess(lan, ["down", id], standardInput: .null, standardOutput: .null, standardError: .inherit) else {
      return
    }
    _ = await remove.wait()
  }
}
