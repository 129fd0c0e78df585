import Foundation
import NearbyCore
import NearbyLab
import NearbyTestSupport
import Testing

@testable import Nearby

/// Trust on first use, verification codes and the known-peers file, with real sessions on
/// loopback and real state directories.
@Suite("Known peers, verification codes and trust")
struct TrustTests {
  static func session(_ name: String, directory: String, policy: AcceptPolicy = .all) async throws -> (PeerIdentity, RunningSession) {
    let identity = try PeerIdentity(directory: directory)
    var configuration = SessionConfiguration(identity: identity, name: try DisplayName(name))
    configuration.advertise = false
    configuration.browse = false
    configuration.listenHost = "127.0.0.1"
    configuration.acceptPolicy = policy
    let session = try NearbySession(configuration: configuration)
    let events = Recorder(session.events)
    let task = Task { try await session.run() }
    guard let port = await session.waitUntilListening() else { throw WaitError(description: "\(name) did not start") }
    return (identity, RunningSession(session: session, events: events, task: task, port: port))
  }

  @Test func bothSidesSeeTheSameCodeAndTrustIsRememberedAcrossRuns() async throws {
    let aliceDirectory = Repository.temporaryDirectory("trust-alice")
    let bobDirectory = Repository.temporaryDirectory("trust-bob")
    let (_, bob) = try await Self.session("bob", directory: bobDirectory)
    let aliceID = try await firstRun(aliceDirectory, bob: bob, bobDirectory: bobDirectory)

    // Next run (the first one's identity is released): bob is still verified, and
    // `.known` accepts him (only him).
    let (aliceIdentity, alice) = try await Self.session("alice", directory: aliceDirectory, policy: .known)
    #expect(alice.peer.id == aliceID)
    #expect(aliceIdentity.knownPeers.first?.isVerified == true)
    await bob.session.invite(endpoints: [alice.endpoint])
    let again = try await bob.expect("connected again") { if case .connected(let p, _) = $0, p.id == aliceID { p } else { nil } }
    #expect(again.id == alice.peer.id)
    let aliceAgain = try await alice.expect("connected to bob") { if case .connected(let p, let s) = $0 { (p, s) } else { nil } }
    #expect(aliceAgain.0.id == bob.peer.id && aliceAgain.1.isVerified)
    let (_, carol) = try await Self.session("carol", directory: Repository.temporaryDirectory("trust-carol"))
    await carol.session.invite(endpoints: [alice.endpoint])
    let declined = try await carol.expect("declined") { if case .declined(_, let reason) = $0 { reason } else { nil } }
    #expect(declined == .notAllowed)
    try await carol.stop()
    try await bob.stop()
    try await alice.stop()
  }

  /// Alice meets bob, compares codes and trusts him. - Returns: alice's id.
  private func firstRun(_ directory: String, bob: RunningSession, bobDirectory: String) async throws -> PeerID {
    let (identity, alice) = try await Self.session("alice", directory: directory)
    await alice.session.invite(endpoints: [bob.endpoint])
    let aliceSees = try await alice.expect("connected") { if case .connected(let p, let s) = $0 { (p, s) } else { nil } }
    let bobSees = try await bob.expect("connected") { if case .connected(let p, let s) = $0 { (p, s) } else { nil } }
    #expect(aliceSees.1.verificationCode == bobSees.1.verificationCode, "the codes of one session match")
    #expect(aliceSees.1.verificationCode.count == 6 && aliceSees.1.verificationCode.allSatisfy(\.isNumber))
    #expect(!aliceSees.1.isVerified && !bobSees.1.isVerified)
    // Trust on first use: each remembers the other, unverified, with its key.
    #expect(identity.knownPeers.map(\.id) == [bob.peer.id])
    #expect(identity.knownPeers.first?.isVerified == false)
    // Written a moment later, off the session's I/O thread; readable while the session holds the lock.
    let deadline = ContinuousClock.now + .seconds(10)
    while try PeerIdentity.knownPeers(in: bobDirectory).isEmpty, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
    #expect(try PeerIdentity.knownPeers(in: bobDirectory).map(\.id) == [alice.peer.id])

    // /verify: the code shows on both sides; /trust marks bob verified.
    await alice.session.requestVerification(of: bob.peer.id)
    let shown = try await alice.expect("verification") { if case .verification(_, let code, false) = $0 { code } else { nil } }
    let asked = try await bob.expect("asked to verify") { if case .verification(_, let code, true) = $0 { code } else { nil } }
    #expect(shown == aliceSees.1.verificationCode && asked == shown)
    try await alice.session.trust(bob.peer.id)
    _ = try await alice.expect("trusted") { if case .trusted(let p) = $0, p.id == bob.peer.id { true } else { nil } }
    #expect(identity.knownPeers.first?.isVerified == true)
    try await alice.stop()
    _ = try await bob.expect("alice left") { if case .disconnected = $0 { true } else { nil } }
    return alice.peer.id
  }

  @Test func aPeerThatTakesTheNameOfAVerifiedPeerIsFlagged() async throws {
    let directory = Repository.temporaryDirectory("trust-impostor")
    let (identity, alice) = try await Self.session("alice", directory: directory)
    let bob = try await RunningSession.start("bob")
    try await connect(alice, bob)
    try await alice.session.trust(bob.peer.id)
    // Another key calls itself bob.
    let impostor = try await RunningSession.start("Bob")
    try await connect(impostor, alice)
    let warning = try await alice.expect("impostor warning") { if case .impostorWarning(let p, let v) = $0 { (p, v) } else { nil } }
    #expect(warning.0.id == impostor.peer.id && warning.1.id == bob.peer.id)
    #expect(identity.knownPeers.first { $0.id == impostor.peer.id }?.isVerified == false)
    try await impostor.stop()
    try await bob.stop()
    try await alice.stop()
  }

  @Test func trustNeedsADirectSession() async throws {
    let alice = try await RunningSession.start("alice")
    await #expect(throws: TrustError.self) { try await alice.session.trust(PeerID.random()) }
    try await alice.stop()
  }

  @Test func aKnownPeersFileThatCannotBeWrittenLeavesTrustUnchangedAndSaysWhy() async throws {
    let directory = Repository.temporaryDirectory("trust-unwritable")
    let (identity, alice) = try await Self.session("alice", directory: directory)
    let bob = try await RunningSession.start("bob")
    // A directory where the file goes: replacing it fails (whatever the user's rights).
    try FileManager.default.createDirectory(atPath: directory + "/known-peers/x", withIntermediateDirectories: true)
    try await connect(alice, bob)
    let saved = try await alice.expect("not remembered") {
      if case .error(.rejected(let text)) = $0, text.contains("known peers") { text } else { nil }
    }
    #expect(saved.contains("known-peers"), "\(saved)")
    do {
      try await alice.session.trust(bob.peer.id)
      Issue.record("trust succeeded without a file")
    } catch {
      #expect(error.description.contains("could not be marked verified"), "\(error)")
    }
    #expect(identity.knownPeers.allSatisfy { !$0.isVerified })
    try await bob.stop()
    try await alice.stop()
  }

  static let key = String(repeating: "0", count: 64)

  @Test(
    "a damaged known-peers file stops the identity, naming the line, and is left as it was",
    arguments: [
      ("garbage\n", "line 1"),
      ("nearby-known-peers 1\nnot a line\n", "line 2"),
      ("nearby-known-peers 1\n\(String(repeating: "a", count: 32)) \(String(repeating: "b", count: 64)) 1 verified bob\n", "does not own"),
      ("nearby-known-peers 1\n\(String(repeating: "a", count: 32)) \(TrustTests.key) 1 verified\n", "line 2"),
      ("nearby-known-peers 9\n", "line 1"),
    ])
  func damagedFiles(contents: String, mention: String) throws {
    let directory = Repository.temporaryDirectory("trust-damaged")
    _ = try PeerIdentity(directory: directory)  // creates the key; released at once
    let path = directory + "/known-peers"
    try contents.write(toFile: path, atomically: true, encoding: .utf8)
    do {
      _ = try PeerIdentity(directory: directory)
      Issue.record("a damaged file was accepted")
    } catch {
      #expect(error.description.contains(mention), "\(error)")
      #expect(error.description.contains("delete"), "says what to do: \(error)")
    }
    #expect(try String(contentsOfFile: path, encoding: .utf8) == contents, "never rewritten (so nothing is silently re-trusted)")
  }

  @Test func theFileRoundTripsAndIsWrittenOwnerOnly() throws {
    let id = SecureTestPeer.makeIdentity(seed: 9)
    let peer = KnownPeer(
      id: id.peerID, publicKey: id.publicKey.bytes.hexString, name: try DisplayName("zoë the 2nd"), firstSeen: 1_700_000_000, isVerified: true)
    let text = KnownPeersFile.encode([peer])
    #expect(try KnownPeersFile.decode(text, path: "x") == [peer])
    let directory = Repository.temporaryDirectory("trust-mode")
    let identity = try PeerIdentity(directory: directory)
    try identity.record(Peer(id: id.peerID, name: try DisplayName("z")), publicKey: id.publicKey.bytes, now: 1)
    let attributes = try FileManager.default.attributesOfItem(atPath: directory + "/known-peers")
    #expect((attributes[.posixPermissions] as? Int) == 0o600)
  }
}
