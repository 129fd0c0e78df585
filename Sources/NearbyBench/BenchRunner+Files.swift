// One file: the file benchmarks (direct, through a relay process, a message during a
// transfer, the receiver's memory) share their fixtures and their baselines (sendfile(2),
// a synced copy into the download folder, hashing and sealing on one core).

import CNearbySystem
import Dispatch
import Nearby
import NearbyCrypto
import NearbySystem
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// `files`: one large file over loopback (1 GiB; 64 MiB with --quick), next to the 64 KiB
/// message throughput of the same run, `sendfile(2)` of the same file over raw TCP, a synced
/// copy of it into the download folder and one core hashing and sealing its bytes; the
/// latency of a chat message sent during the transfer next to the same without it; and the
/// resident memory a receiving process grows by while it takes the file.
extension BenchRunner {
  func files() async throws -> [BenchmarkResult] {
    let size = quick ? 64 << 20 : 1 << 30
    let label = quick ? "64 MiB" : "1 GiB"
    let folder = BenchFiles.temporaryFolder()
    do {
      return try await files(size: size, label: label, in: folder)
    } catch {
      await BenchFiles.remove(folder)
      throw error
    }
  }

  private func files(size: Int, label: String, in folder: String) async throws -> [BenchmarkResult] {
    progress("files: writing a \(label) file in \(folder)")
    let source = folder + "/large.bin"
    try await BenchFiles.offPool { try BenchFiles.write(source, size: size) }

    progress("files: \(label) between two sessions of this process, 64 B messages sent during it")
    let transfer = try await sessionTransfer(source, into: folder + "/in-process", probing: true)
    let quiet = try await messageLatency(samples: quick ? 50 : 200)
    progress("files: \(size >> 16) messages of 64 KiB, the same bytes")
    let messages = try await oneWay(size: 65_536, count: size >> 16)
    progress("files: sendfile(2) of the same file over raw TCP")
    let raw = try await BenchFiles.offPool { try BenchFiles.sendfileOneWay(source) }
    progress("files: copying the file into the download folder, synced (what saving it costs there)")
    let copied = try await BenchFiles.offPool { try BenchFiles.copyAndSync(source, to: folder + "/in-process/copy.bin") }
    // What each byte of a file costs either side at least, without any I/O: a BLAKE2b and an
    // AEAD pass (the sender seals, the receiver opens), on one core.
    let cipher: RecordCipher = RecordCipher.aes256GCM.isAvailable ? .aes256GCM : .chacha20Poly1305
    let duration: Duration = quick ? .milliseconds(200) : .seconds(1)
    let hashAndSeal = try await BenchFiles.offPool { AEADBenchmark.sealRate(cipher: cipher, size: 65_536, duration: duration, hashing: true) }
    progress("files: \(label) into a receiving process (nearby receive), its resident memory")
    let growth = try await receiverGrowth(source, into: folder + "/child")
    let relayedSize = min(size, 256 << 20)
    let relayedLabel = relayedSize == size ? label : "256 MiB"
    let relayedSource = relayedSize == size ? source : folder + "/relayed.bin"
    if relayedSize != size { try await BenchFiles.offPool { try BenchFiles.write(relayedSource, size: relayedSize) } }
    progress("files: \(relayedLabel) through a relay process (nearby relay), its resident memory")
    let relayed = try await relayedTransfer(relayedSource, size: relayedSize, into: folder + "/relayed")
    await BenchFiles.remove(folder)

    func megabytes(_ time: Duration) -> Double { Double(size) / time.seconds / 1e6 }
    let latency = Percentiles(transfer.latencies)
    let idle = Percentiles(quiet)
    return [
      BenchmarkResult(
        name: "files", figure: "\(label) file one way", unit: "MB/s", ours: megabytes(transfer.time),
        baseline: megabytes(messages), baselineName: "64 KiB messages, same bytes", higherIsBetter: true),
      BenchmarkResult(
        name: "files", figure: "\(label) file one way", unit: "MB/s", ours: megabytes(transfer.time), baseline: megabytes(raw),
        baselineName: "raw TCP sendfile(2) of the file", higherIsBetter: true),
      BenchmarkResult(
        name: "files", figure: "\(label) file one way", unit: "MB/s", ours: megabytes(transfer.time), baseline: megabytes(copied),
        baselineName: "copying the file into the download folder, fsync at the end", higherIsBetter: true),
      BenchmarkResult(
        name: "files", figure: "\(label) file one way", unit: "MB/s", ours: megabytes(transfer.time),
        baseline: hashAndSeal.bytesPerSecond / 1e6, baselineName: "BLAKE2b and sealing of 64 KiB, one core (\(cipher))", higherIsBetter: true),
      BenchmarkResult(
        name: "files", figure: "64 B message during the transfer, p50", unit: "µs", ours: latency.p50.microseconds,
        baseline: idle.p50.microseconds, baselineName: "the same without a transfer", higherIsBetter: false),
      BenchmarkResult(
        name: "files", figure: "64 B message during the transfer, p99", unit: "µs", ours: latency.p99.microseconds,
        baseline: idle.p99.microseconds, baselineName: "the same without a transfer", higherIsBetter: false),
      BenchmarkResult(
        name: "files", figure: "64 B message during the transfer, max", unit: "µs", ours: latency.max.microseconds,
        baseline: idle.max.microseconds, baselineName: "the same without a transfer", higherIsBetter: false),
      BenchmarkResult(
        name: "files", figure: "receiver's resident memory growth, \(label)", unit: "MB", ours: Double(growth) / 1e6, baseline: nil,
        baselineName: nil, higherIsBetter: false),
      BenchmarkResult(
        name: "files", figure: "\(relayedLabel) file through a relay process", unit: "MB/s", ours: Double(relayedSize) / relayed.time.seconds / 1e6,
        baseline: megabytes(transfer.time), baselineName: "the \(label) file, direct", higherIsBetter: true),
      BenchmarkResult(
        name: "files", figure: "relay's resident memory growth, \(relayedLabel) through it", unit: "MB", ours: Double(relayed.growth) / 1e6,
        baseline: nil, baselineName: nil, higherIsBetter: false),
    ]
  }

  /// Sends the file from A to B (both here) and, when `probing`, a 64 B message every 20 ms
  /// meanwhile: the time from the offer's acceptance to A's completion, and each message's
  /// one-way latency (sent on A's executor, taken on B's).
  private func sessionTransfer(_ source: String, into downloads: String, probing: Bool) async throws -> (time: Duration, latencies: [Duration]) {
    let (a, b) = try await pair()
    let clock = ContinuousClock()
    let sentAt = MessageClock()
    let bEvents = b.session.events.makeAsyncIterator()
    let bSession = b.session
    let receiving = Task(executorPreference: bSession.executor) { () -> [Duration] in
      var events = bEvents
      var latencies: [Duration] = []
      while let event = await events.next() {
        switch event {
        case .transfer(.offer(let offer)): try? await offer.accept(into: downloads)
        case .message(let message): if let sent = sentAt.take(message.id) { latencies.append(clock.now - sent) }
        case .transfer(.finished): return latencies
        default: break
        }
      }
      return latencies
    }
    let aSession = a.session
    let drain = Task(executorPreference: aSession.executor) { for await _ in aSession.events {} }
    let start = clock.now
    let outgoing = try await a.session.sendFiles(at: [source], to: b.peer.id)
    let bID = b.peer.id
    let probe = Task(executorPreference: aSession.executor) {
      guard probing else { return }
      while !Task.isCancelled {
        let now = clock.now
        if let id = try? await aSession.send([UInt8](repeating: 0x70, count: 64), to: .peer(bID)) { sentAt.record(id, now) }
        try? await Task.sleep(for: .milliseconds(20))
      }
    }
    let end = await outgoing.result()
    let time = clock.now - start
    probe.cancel()
    let latencies = await receiving.value
    drain.cancel()
    await a.stop()
    await b.stop()
    guard end == .completed else { throw BenchError("the transfer did not complete: \(end.map { "\($0)" } ?? "stopped")") }
    return (time, latencies)
  }

  /// One-way latency of 64 B messages every 20 ms, with nothing else going on.
  private func messageLatency(samples: Int) async throws -> [Duration] {
    let (a, b) = try await pair()
    let clock = ContinuousClock()
    let sentAt = MessageClock()
    let bEvents = b.session.events.makeAsyncIterator()
    let bSession = b.session
    let receiving = Task(executorPreference: bSession.executor) { () -> [Duration] in
      var events = bEvents
      var latencies: [Duration] = []
      while latencies.count < samples, let event = await events.next() {
        if case .message(let message) = event, let sent = sentAt.take(message.id) { latencies.append(clock.now - sent) }
      }
      return latencies
    }
    let aSession = a.session
    let bID = b.peer.id
    let drain = Task(executorPreference: aSession.executor) { for await _ in aSession.events {} }
    let sending = Task(executorPreference: aSession.executor) {
      for _ in 0..<samples {
        let now = clock.now
        if let id = try? await aSession.send([UInt8](repeating: 0x70, count: 64), to: .peer(bID)) { sentAt.record(id, now) }
        try? await Task.sleep(for: .milliseconds(20))
      }
    }
    await sending.value
    let latencies = await receiving.value
    drain.cancel()
    await a.stop()
    await b.stop()
    return latencies
  }

  /// Sends the file to a `nearby receive` process and samples its resident memory: its peak
  /// (VmHWM) minus what it had once ready.
  private func receiverGrowth(_ source: String, into downloads: String) async throws -> Int {
    guard let executable = BenchRunner.executablePath() else { throw BenchError("cannot find the nearby executable for the receiver") }
    let state = BenchFiles.temporaryFolder()
    let started = try await ListeningChild.start(
      executable,
      [
        "receive", "--name", "bench-receiver", "--state-dir", state, "--downloads", downloads, "--accept-files", "all", "--json", "--service",
        "nearby-bench",
      ], errorsToo: false, portAfter: "\"port\":", inLinesWith: "\"event\":\"ready\"")
    let child = started.child
    let reading = started.reading
    guard let port = started.port else {
      child.terminate(SIGKILL)
      reading.cancel()
      throw BenchError("the receiving process did not start")
    }
    try await Task.sleep(for: .milliseconds(300))
    let sampler = ResidentSampler(pid: child.pid)
    let a = try await LocalSession.start("bench-sender")
    let aSession = a.session
    var events = aSession.events.makeAsyncIterator()
    await aSession.invite(endpoints: [Endpoint(host: "127.0.0.1", port: port)])
    var receiver: Peer?
    while receiver == nil, let event = await events.next() {
      if case .connected(let peer, _) = event { receiver = peer }
      if case .error(.connectFailed(_, let detail)) = event { throw BenchError("could not reach the receiver: \(detail)") }
    }
    let drain = Task(executorPreference: aSession.executor) { while await events.next() != nil {} }
    let outgoing = try await aSession.sendFiles(at: [source], to: receiver!.id)
    let end = await outgoing.result()
    let growth = sampler.stop()
    _ = await child.wait()
    reading.cancel()
    drain.cancel()
    await a.stop()
    await BenchFiles.remove(state)
    guard end == .completed else { throw BenchError("the transfer to the receiving process did not complete: \(end.map { "\($0)" } ?? "stopped")") }
    return growth
  }

  /// Sends the file from alice to carol (both here) through a `nearby relay` process that
  /// both are connected to: the relayed transfer's rate (every chunk sealed end to end for
  /// carol, acknowledged through the relay), and how much the relay's resident memory grew.
  func relayedTransfer(_ source: String, size: Int, into downloads: String) async throws -> (time: Duration, growth: Int) {
    guard let executable = BenchRunner.executablePath() else { throw BenchError("cannot find the nearby executable for the relay") }
    let state = BenchFiles.temporaryFolder()
    let started = try await ListeningChild.start(
      executable, ["relay", "--name", "bench-relay", "--state-dir", state, "--service", "nearby-bench", "--log-level", "info"], errorsToo: true,
      portAfter: "port=", inLinesWith: "event=listening")
    let relay = started.child
    defer { started.reading.cancel() }
    guard let port = started.port else {
      relay.terminate(SIGKILL)
      _ = await relay.wait()
      throw BenchError("the relay process did not start")
    }
    let alice = try await LocalSession.start("bench-alice")
    let carol = try await LocalSession.start("bench-carol")
    let relayAt = Endpoint(host: "127.0.0.1", port: port)
    var aliceEvents = alice.session.events.makeAsyncIterator()
    await alice.session.invite(endpoints: [relayAt])
    await carol.session.invite(endpoints: [relayAt])
    let carolID = carol.peer.id
    while let event = await aliceEvents.next() {
      if case .reachable(let peer, _) = event, peer.id == carolID { break }
      if case .error(.connectFailed(_, let detail)) = event { throw BenchError("alice could not reach the relay: \(detail)") }
    }
    let carolSession = carol.session
    let receiving = Task(executorPreference: carolSession.executor) {
      for await event in carolSession.events {
        if case .transfer(.offer(let offer)) = event { try? await offer.accept(into: downloads) }
      }
    }
    let aliceSession = alice.session
    let events = aliceEvents
    let drain = Task(executorPreference: aliceSession.executor) {
      var rest = events
      while await rest.next() != nil {}
    }
    try await Task.sleep(for: .milliseconds(200))
    let sampler = ResidentSampler(pid: relay.pid)
    let clock = ContinuousClock()
    let start = clock.now
    let outgoing = try await alice.session.sendFiles(at: [source], to: carolID)
    let end = await outgoing.result()
    let time = clock.now - start
    let growth = sampler.stop()
    receiving.cancel()
    drain.cancel()
    await alice.stop()
    await carol.stop()
    relay.terminate(SIGTERM)
    _ = await relay.wait()
    await BenchFiles.remove(state)
    guard end == .completed else { throw BenchError("the relayed transfer did not complete: \(end.map { "\($0)" } ?? "stopped")") }
    return (time, growth)
  }
}

/// A `nearby` child process whose output goes to a pipe read here: up to the first line that
/// says which port it listens on, then to the end, dropped (so that it never waits for its
/// pipe). `reading` does the rest of the reading; cancel it when done with the child.
struct ListeningChild {
  let child: ChildProcess
  /// The port from the first line containing `marker`, after `key`; nil when the output
  /// ended without one.
  let port: UInt16?
  let reading: Task<Void, Never>

  /// Starts `executable` with `arguments`, its standard output (and, with `errorsToo`, its
  /// standard error) into the pipe, and reads up to the port.
  static func start(_ executable: String, _ arguments: [String], errorsToo: Bool, portAfter key: String, inLinesWith marker: String) async throws
    -> ListeningChild
  {
    var pipe: [Int32] = [0, 0]
    guard Glibc.pipe(&pipe) == 0 else { throw BenchError("pipe failed") }
    let child: ChildProcess
    do {
      child = try ChildProcess(
        executable, arguments, environment: ["PATH": "/usr/bin:/bin", "AVAHI_COMPAT_NOWARN": "1"], standardInput: .null,
        standardOutput: .descriptor(pipe[1]), standardError: .descriptor(errorsToo ? pipe[1] : 2))
    } catch {
      close(pipe[0])
      close(pipe[1])
      throw error
    }
    close(pipe[1])
    var lines = LineReader.lines(fd: pipe[0], closeAtEnd: true).makeAsyncIterator()
    var port: UInt16?
    while let line = await lines.next() {
      if line.contains(marker), let range = line.firstRange(of: key) {
        port = UInt16(line[range.upperBound...].prefix { $0.isNumber })
        break
      }
    }
    let output = lines
    let reading = Task {
      var rest = output
      while await rest.next() != nil {}
    }
    return ListeningChild(child: child, port: port, reading: reading)
  }
}

/// Samples a process's resident memory (VmRSS) every 10 ms on a thread of its own, from
/// now until ``stop()``: the most it grew by. (VmHWM would also count what the process
/// peaked at while it started, before the sampling.)
final class ResidentSampler: Sendable {
  private let state = Mutex<(running: Bool, before: Int, most: Int)>((true, 0, 0))
  private let finished = DispatchSemaphore(value: 0)

  init(pid: pid_t) {
    let before = BenchFiles.memory(of: pid).resident
    state.withLock {
      $0.before = before
      $0.most = before
    }
    // Detached: `stop()` waits for `finished`, not for the thread.
    let sampler = Thread { [self] in
      while state.withLock({ $0.running }) {
        let now = BenchFiles.memory(of: pid).resident
        state.withLock { $0.most = max($0.most, now) }
        usleep(10_000)
      }
      finished.signal()
    }
    sampler.start()
    sampler.detach()
  }

  /// Stops the sampling: bytes the resident memory grew by at most.
  func stop() -> Int {
    state.withLock { $0.running = false }
    finished.wait()
    return state.withLock { max(0, $0.most - $0.before) }
  }
}

/// When each probe message was sent, by id.
final class MessageClock: Sendable {
  private let sent = Mutex<[MessageID: ContinuousClock.Instant]>([:])
  func record(_ id: MessageID, _ at: ContinuousClock.Instant) { sent.withLock { $0[id] = at } }
  func take(_ id: MessageID) -> ContinuousClock.Instant? { sent.withLock { $0.removeValue(forKey: id) } }
}

/// Files for the benchmark, made and removed on threads of their own (never on the pool).
enum BenchFiles {
  static func temporaryFolder() -> String {
    let base = getenv("TMPDIR").map { String(cString: $0) }.flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
    var template = Array("\(base)/nearby-bench-XXXXXX".utf8CString)
    return template.withUnsafeMutableBufferPointer { String(cString: mkdtemp($0.baseAddress!)) }
  }

  /// Runs blocking work on a thread of its own.
  static func offPool<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    try await Thread.offPool(work)
  }

  static func write(_ path: String, size: Int) throws {
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
    guard fd >= 0 else { throw BenchError("cannot create \(path)") }
    defer { close(fd) }
    var state: UInt64 = 0x9E37_79B9_7F4A_7C15
    var buffer = [UInt64](repeating: 0, count: 1 << 17)
    var left = size
    while left > 0 {
      for index in buffer.indices {
        state ^= state << 13
        state ^= state >> 7
        state ^= state << 17
        buffer[index] = state
      }
      let count = min(left, buffer.count * 8)
      let written = buffer.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, count) }
      guard written == count else { throw BenchError("cannot write \(path)") }
      left -= count
    }
  }

  /// Copies `source` into a new file `destination` (128 KiB reads and writes, as chunks
  /// arrive) and syncs it, as a received file is made durable before its rename; removes the
  /// copy. - Returns: the time from the first read to the end of the `fsync`.
  static func copyAndSync(_ source: String, to destination: String) throws -> Duration {
    let input = open(source, O_RDONLY | O_CLOEXEC)
    guard input >= 0 else { throw BenchError("cannot open \(source)") }
    defer { close(input) }
    let output = open(destination, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
    guard output >= 0 else { throw BenchError("cannot create \(destination)") }
    defer {
      close(output)
      unlink(destination)
    }
    var buffer = [UInt8](repeating: 0, count: 128 << 10)
    let clock = ContinuousClock()
    let start = clock.now
    while true {
      let count = buffer.withUnsafeMutableBytes { Glibc.read(input, $0.baseAddress, $0.count) }
      guard count >= 0 else { throw BenchError("cannot read \(source)") }
      if count == 0 { break }
      let written = buffer.withUnsafeBytes { Glibc.write(output, $0.baseAddress, count) }
      guard written == count else { throw BenchError("cannot write \(destination)") }
    }
    guard fsync(output) == 0 else { throw BenchError("cannot sync \(destination)") }
    return clock.now - start
  }

  static func remove(_ path: String) async {
    _ = try? await offPool { system("rm -rf '\(path)'") }
  }

  /// `sendfile(2)` of the whole file into a loopback socket, a thread reading it out: the
  /// time until the last byte is read.
  static func sendfileOneWay(_ path: String) throws -> Duration {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { throw BenchError("cannot open \(path)") }
    defer { close(fd) }
    var info = stat()
    fstat(fd, &info)
    let size = Int(info.st_size)
    let (writer, reader) = RawTCP.pair()
    defer {
      close(writer)
      close(reader)
    }
    let clock = ContinuousClock()
    let start = clock.now
    let sender = Thread {
      var offset: off_t = 0
      while offset < off_t(size) {
        if sendfile(writer, fd, &offset, size - Int(offset)) <= 0 { return }
      }
    }
    sender.start()
    var buffer = [UInt8](repeating: 0, count: 1 << 20)
    var received = 0
    while received < size {
      let count = buffer.withUnsafeMutableBytes { recv(reader, $0.baseAddress, $0.count, 0) }
      if count <= 0 { break }
      received += count
    }
    let elapsed = clock.now - start
    sender.join()
    guard received == size else { throw BenchError("raw sendfile lost bytes: \(received) of \(size)") }
    return elapsed
  }

  /// Resident and peak resident bytes of a process (VmRSS, VmHWM).
  static func memory(of pid: pid_t) -> (resident: Int, peak: Int) {
    let fd = open("/proc/\(pid)/status", O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { return (0, 0) }
    defer { close(fd) }
    var buffer = [UInt8](repeating: 0, count: 8192)
    let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
    guard count > 0 else { return (0, 0) }
    var resident = 0
    var peak = 0
    for line in String(decoding: buffer[0..<count], as: UTF8.self).split(separator: "\n") {
      // "VmRSS:\t  12345 kB": a tab after the key, then spaces.
      let fields = line.split(omittingEmptySubsequences: true) { $0 == " " || $0 == "\t" }
      guard fields.count >= 2, let kilobytes = Int(fields[1]) else { continue }
      if fields[0] == "VmRSS:" { resident = kilobytes * 1024 }
      if fields[0] == "VmHWM:" { peak = kilobytes * 1024 }
    }
    return (resident, peak)
  }
}
