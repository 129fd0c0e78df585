import Foundation
import NearbyCore
import NearbyLab
import NearbyTestSupport
import Testing

@testable import Nearby

/// Offers built to harm the receiver, between sessions on 127.0.0.1 (real sockets, real
/// files): names made to climb out of the download folder, and ids taken from another peer.
@Suite("File transfers from a hostile sender")
struct FileHostileOfferTests {
  /// Names that climbed out of the download folder before (PROTOCOL.md 13.5): a component
  /// that shortening made `..` (two dots and a letter with 300 combining marks), and a `/`
  /// joined to a combining mark. Everything lands inside the download folder, and nothing
  /// appears beside it.
  @Test(.timeLimit(.minutes(1))) func namesMadeToClimbOutLandInside() async throws {
    let climb = ".." + "a" + String(repeating: "\u{301}", count: 300)
    let hostile = [
      "a/\(climb)/\(climb)/.config/autostart/x.desktop", "../\u{301}x", "b/\u{301}/../../c", "a" + String(repeating: "\u{301}", count: 300),
    ]
    let base = FileFixtures.folder()
    let downloads = base + "/in"
    let (alice, bob, end, saved) = try await FileTransferTests.sendUnderNames(hostile, into: downloads)
    #expect(end == .completed)
    // Compared as bytes: as characters, `/` and the combining mark after it are one.
    let inside = Array((downloads + "/").utf8)
    for file in saved { #expect(file.path.utf8.starts(with: inside), "\(file.path)") }
    let names = saved.map { String(decoding: Array($0.path.utf8).dropFirst(inside.count), as: UTF8.self) }
    #expect(
      names.map { Array($0.unicodeScalars) }
        == ["a/_/_/.config/autostart/x.desktop", "\u{301}x", "b/\u{301}/c", "_"].map { Array($0.unicodeScalars) })
    #expect(try FileManager.default.contentsOfDirectory(atPath: base) == ["in"], "nothing beside the download folder")
    try await alice.stop()
    try await bob.stop()
  }

  /// Transfer ids are random: a peer that offers under an id another peer's transfer had
  /// here is playing with ids, and is refused (taking ids over in turns grew the memory of
  /// closed transfers).
  @Test(.timeLimit(.minutes(1))) func anOfferUnderAnIdAnotherPeerUsedIsRefused() async throws {
    let source = FileFixtures.folder()
    FileFixtures.write(source + "/a.txt", text: "first")
    let id = TransferID.random()
    let carol = try await RunningSession.start("carol") { $0.transferTuning.transferID = id }
    let (alice, bob) = try await FileTransferTests.pair { $0.transferTuning.transferID = id }
    try await connect(carol, bob)
    let first = try await carol.session.sendFiles(at: [source + "/a.txt"], to: bob.peer.id)
    #expect(first.id == id)
    try await bob.expectOffer().refuse()
    guard case .failed(.refused, _)? = await first.result() else {
      Issue.record("carol's offer was not refused")
      return
    }
    let second = try await alice.session.sendFiles(at: [source + "/a.txt"], to: bob.peer.id)
    #expect(second.id == id)
    guard case .failed(_, let message)? = await second.result() else {
      Issue.record("alice's offer under carol's id did not fail")
      return
    }
    #expect(message.contains("belongs to another peer"), "\(message)")
    #expect(await bob.session.transfers.isEmpty)
    // Carol may still use her own id with bob: her offer is answered as before.
    let again = try await carol.session.sendFiles(at: [source + "/a.txt"], to: bob.peer.id)
    #expect(again.id == id)
    guard case .failed(let reason, let text)? = await again.result() else {
      Issue.record("carol's second offer under her id got no answer")
      return
    }
    #expect(!text.contains("belongs to another peer"), "\(reason) \(text)")
    try await alice.stop()
    try await bob.stop()
    try await carol.stop()
  }

  /// A peer that offers and cancels in a loop frees its slot among the pending offers each
  /// time: without a limit of its own, each pair was an event for the application, as fast
  /// as the peer could send them. Now 32 at once, then 2 a second, and the rest are refused
  /// (`busy`) before anything is made for them.
  @Test(.timeLimit(.minutes(1))) func offersCancelledInALoopAreRefusedBeyondTheirRate() async throws {
    let bob = try await RunningSession.start("bob")
    let mallory = try SecureTestPeer(port: bob.port)
    try await mallory.joinSession(name: "mallory", capabilities: [.files])
    _ = try await bob.expect("mallory connected") { if case .connected(let p, _) = $0, p.id == mallory.peerID { true } else { nil } }
    let pairs = 400
    let ids = (0..<pairs).map { _ in TransferID.random() }
    let started = ContinuousClock.now
    mallory.write(Self.offersCancelledAtOnce(ids))
    let refused = Set(ids)
    let received = await mallory.readInBackground { frames in
      Self.busyRefusals(frames, among: refused).count >= pairs - 32 - 8
    }
    let elapsed = ContinuousClock.now - started
    let busy = Self.busyRefusals(received.frames, among: refused)
    // Let every offer that got through reach bob's events.
    try await Task.sleep(for: .milliseconds(200))
    let offered = bob.events.all.filter { if case .transfer(.offer(let o)) = $0, o.from.id == mallory.peerID { true } else { false } }.count
    let seconds: Double = (elapsed + .milliseconds(200)) / .seconds(1)
    let allowed = 32 + Int(2 * seconds) + 1
    #expect(offered >= 32, "the first 32 are asked")
    #expect(offered <= allowed, "\(offered) offers reached the application in \(elapsed), at most \(allowed) allowed")
    #expect(busy.count + offered == pairs, "every other offer was refused: \(busy.count) refused, \(offered) offered")
    #expect(
      received.frames.contains { if case .file(let f) = $0, case .cancel(_, let text) = f.body { text.contains("too many offers") } else { false } })
    // An honest peer is not affected.
    let alice = try await RunningSession.start("alice")
    try await connect(alice, bob)
    let source = FileFixtures.folder()
    FileFixtures.write(source + "/a.txt", text: "hello")
    _ = try await alice.session.sendFiles(at: [source + "/a.txt"], to: bob.peer.id)
    let aliceID = alice.peer.id
    _ = try await bob.expect("alice's offer") { if case .transfer(.offer(let o)) = $0, o.from.id == aliceID { true } else { nil } }
    try await alice.stop()
    try await bob.stop()
  }

  /// An application that does not keep up with its events (here a second reader of them
  /// that never reads) is not handed more offers: past the backlog, they are refused.
  @Test(.timeLimit(.minutes(1))) func anApplicationBehindWithItsEventsIsOfferedNoMore() async throws {
    let bob = try await RunningSession.start("bob") {
      $0.transferTuning.offerBurst = 10_000
      $0.transferTuning.offerEventBacklog = 40
    }
    let stalled = bob.session.events.makeAsyncIterator()  // subscribed, and never read
    let mallory = try SecureTestPeer(port: bob.port)
    try await mallory.joinSession(name: "mallory", capabilities: [.files])
    let ids = (0..<300).map { _ in TransferID.random() }
    mallory.write(Self.offersCancelledAtOnce(ids))
    let refused = Set(ids)
    let received = await mallory.readInBackground { frames in Self.busyRefusals(frames, among: refused).count >= 250 }
    let busy = Self.busyRefusals(received.frames, among: refused)
    #expect(busy.count >= 250)
    #expect(
      received.frames.contains {
        if case .file(let f) = $0, case .cancel(_, let text) = f.body { text.contains("behind with its events") } else { false }
      })
    try await Task.sleep(for: .milliseconds(200))
    let offered = bob.events.all.filter { if case .transfer(.offer(let o)) = $0, o.from.id == mallory.peerID { true } else { false } }.count
    #expect(offered <= 40, "\(offered) offers reached the application")
    #expect(offered + busy.count == ids.count)
    _ = stalled
    try await bob.stop()
  }

  /// An OFFER of one small file for each of `ids`, each followed by its CANCEL.
  static func offersCancelledAtOnce(_ ids: [TransferID]) -> [Frame] {
    var frames: [Frame] = []
    for id in ids {
      frames.append(.file(TransferFrame(id, .offer([OfferedFile(name: "x.txt", size: 10)]))))
      frames.append(.file(TransferFrame(id, .cancel(.cancelled, "never mind"))))
    }
    return frames
  }

  /// Offers that come through a relay are counted against the relay's connection as well as
  /// against their peer: a hostile relay can make up thousands of peers, each with a burst of
  /// its own. And the buckets kept stay few: those that refilled are dropped.
  @Test func offersAreCountedPerCarryingConnectionAndTheBucketsStayFew() async throws {
    let bob = try await RunningSession.start("bob") {
      $0.transferTuning.offerBurst = 4
      $0.transferTuning.offersPerSecond = 0.001
    }
    let relay = ConnectionID(1 << 50)
    var answers: [Bool] = []
    for _ in 0..<10 { answers.append(await bob.session.offerRefusal(from: PeerID.random(), via: relay, asks: true) == nil) }
    #expect(answers == [true, true, true, true, false, false, false, false, false, false], "4 through one relay, whoever they come from")
    #expect(await bob.session.offerRefusal(from: PeerID.random(), via: ConnectionID(2 << 50), asks: true) == nil, "another connection has its own")
    let known = PeerID.random()
    for _ in 0..<4 { _ = await bob.session.offerRefusal(from: known, via: ConnectionID(3 << 50), asks: true) }
    #expect(await bob.session.offerRefusal(from: known, via: ConnectionID(4 << 50), asks: true) != nil, "and each peer its own, on any connection")
    try await bob.stop()

    // Buckets refill in 4 µs here: after 5 000 offerers, few remain.
    let carol = try await RunningSession.start("carol") {
      $0.transferTuning.offerBurst = 4
      $0.transferTuning.offersPerSecond = 1_000_000
    }
    var refused = 0
    for index in 0..<5000 {
      if await carol.session.offerRefusal(from: PeerID.random(), via: ConnectionID(UInt64(5 << 50) + UInt64(index)), asks: true) != nil {
        refused += 1
      }
    }
    let kept = await carol.session.files.offerAllowance.count
    #expect(kept < 4096, "\(kept) buckets kept")
    #expect(refused == 0, "fresh peers on fresh connections: \(refused) refused")
    try await carol.stop()
  }

  /// The transfers among `ids` that `frames` refuse as `busy`.
  static func busyRefusals(_ frames: [Frame], among ids: Set<TransferID>) -> Set<TransferID> {
    Set(
      frames.compactMap { frame in
        if case .file(let f) = frame, case .cancel(.busy, _) = f.body, ids.contains(f.transfer) { f.transfer } else { nil }
      })
  }
}

/// The last check before the disk: paths that are not safe below the download folder (read
/// back from a record of an older version, say) are refused, and nothing is written.
@Suite("Paths checked before the disk")
struct FileSinkPathTests {
  @Test(arguments: [[], [""], [".."], ["a", ".."], ["a/b"], ["a\u{0}b"]] as [[String]])
  func anUnsafePathIsRefusedAndNothingIsWritten(_ path: [String]) throws {
    let base = FileFixtures.folder()
    let downloads = base + "/in"
    let entries = [
      0: FileSink.Entry(path: ["fine.txt"], size: 1, isExecutable: false, isDirectory: false),
      1: FileSink.Entry(path: path, size: 1, isExecutable: false, isDirectory: false),
    ]
    guard case .failure(let error) = FileSink.create(in: downloads, entries: entries, checkFreeSpace: false) else {
      Issue.record("created")
      return
    }
    #expect(error.description.contains("not a safe path below the download folder"), "\(error)")
    #expect(FileFixtures.listing(base).isEmpty, "\(FileFixtures.listing(base))")
    guard case .failure = FileSink.resume(in: downloads, entries: entries, saved: [:]) else {
      Issue.record("resumed")
      return
    }
    #expect(FileFixtures.listing(base).isEmpty, "\(FileFixtures.listing(base))")
  }
}

/// A receiver that asks for an ended file again (RESEND) between chunks of the next one.
@Suite("Reading what a receiver asks for again")
struct FileSourceRereadTests {
  static func item(_ path: String) -> FileSource.Item {
    var info = stat()
    precondition(stat(path, &info) == 0)
    return FileSource.Item(
      path: path, size: UInt64(info.st_size), modified: (info.st_mtim.tv_sec, info.st_mtim.tv_nsec), isDirectory: false, nested: false)
  }

  /// The next file's hash goes on where it was: the bytes already sent are not read and
  /// hashed again. (Its hash started over at each switch of file, so that each such RESEND,
  /// about 40 bytes from the receiver, cost a reading and hashing of everything sent of the
  /// next file.) Seen here through a file whose first megabyte changes on disk after it was
  /// sent, its size and time kept: the hash is that of the bytes sent.
  @Test func anEndedFileAskedForAgainDoesNotMakeTheNextOneHashedAgain() throws {
    let folder = FileFixtures.folder()
    FileFixtures.write(folder + "/first", text: "the first file")
    FileFixtures.write(folder + "/second", size: 3 << 20, seed: 9)
    let sent = FileFixtures.blake2b(folder + "/second")
    let source = FileSource(items: [Self.item(folder + "/first"), Self.item(folder + "/second")])
    _ = try source.read(index: 0, offset: 0, count: 1 << 20).get()
    _ = try source.read(index: 1, offset: 0, count: 1 << 20).get()
    _ = try source.read(index: 1, offset: 1 << 20, count: 1 << 20).get()
    // The first megabyte changes on disk (same size, same time).
    var info = stat()
    #expect(stat(folder + "/second", &info) == 0)
    let fd = open(folder + "/second", O_WRONLY | O_CLOEXEC)
    #expect(fd >= 0)
    let zeros = [UInt8](repeating: 0, count: 1 << 20)
    #expect(zeros.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, 0) } == 1 << 20)
    var times = [info.st_atim, info.st_mtim]
    #expect(futimens(fd, &times) == 0)
    close(fd)
    // A RESEND of the ended first file, then the rest of the second.
    #expect(try source.read(index: 0, offset: 0, count: 1 << 20).get().data == Array("the first file".utf8))
    let last = try source.read(index: 1, offset: 2 << 20, count: 1 << 20).get()
    let hash = try #require(last.hash)
    #expect(hash.map { String(format: "%02x", $0) }.joined() == sent)
  }
}
