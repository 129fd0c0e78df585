import Foundation
import NearbyCore
import NearbyCrypto
import NearbyLab
import NearbyTestSupport
import Testing

@testable import Nearby

/// `nearby peers` against real state directories, and what an older state directory becomes.
@Suite("nearby peers and state directories of an older Nearby")
struct PeersCommandTests {
  /// A state directory whose identity met `peer` (and verified it or not).
  static func directory(meeting peer: IdentityKeyPair, verified: Bool) throws -> String {
    let directory = Repository.temporaryDirectory("peers-cmd")
    let identity = try PeerIdentity(directory: directory)
    try identity.record(Peer(id: peer.peerID, name: try DisplayName("bob")), publicKey: peer.publicKey.bytes, now: 1_800_000_000)
    if verified { try identity.setVerified(peer.peerID, true) }
    return directory
  }

  @Test func listsKnownPeersEvenWhileAChatHoldsTheDirectory() async throws {
    let bob = SecureTestPeer.makeIdentity(seed: 0x42)
    let directory = try Self.directory(meeting: bob, verified: true)
    let holder = try PeerIdentity(directory: directory)  // as a running chat would
    let (status, output) = try await run([Repository.nearby, "peers", "--state-dir", directory])
    #expect(status == 0, "\(output)")
    #expect(output.contains(bob.peerID.hex) && output.contains("verified") && output.contains("bob"), "\(output)")
    let (jsonStatus, json) = try await run([Repository.nearby, "peers", "--json", "--state-dir", directory])
    #expect(jsonStatus == 0)
    #expect(json.contains("\"verified\":true") && json.contains(bob.publicKey.bytes.hexString), "\(json)")
    withExtendedLifetime(holder) {}
  }

  @Test func forgetIsRefusedWhileTheDirectoryIsInUseAndWorksAfterwards() async throws {
    let bob = SecureTestPeer.makeIdentity(seed: 0x43)
    let directory = try Self.directory(meeting: bob, verified: false)
    let prefix = String(bob.peerID.hex.prefix(8))
    do {
      let holder = try PeerIdentity(directory: directory)
      let (status, output) = try await run([Repository.nearby, "peers", "forget", prefix, "--state-dir", directory])
      #expect(status == 1)
      #expect(output.contains("quit the chat"), "\(output)")
      #expect(holder.knownPeers.count == 1, "nothing was forgotten")
    }
    let (status, output) = try await run([Repository.nearby, "peers", "forget", prefix, "--state-dir", directory])
    #expect(status == 0, "\(output)")
    #expect(output.contains("forgot bob"))
    #expect(try PeerIdentity.knownPeers(in: directory).isEmpty)
    let (unknown, hint) = try await run([Repository.nearby, "peers", "forget", prefix, "--state-dir", directory])
    #expect(unknown == 1 && hint.contains("no known peer"), "\(hint)")
  }

  @Test func anOlderStateDirectoryGetsANewIdentityWithANotice() throws {
    let directory = Repository.temporaryDirectory("peers-v1")
    let oldID = PeerID.random()
    try (oldID.hex + "\n").write(toFile: directory + "/peer-id", atomically: true, encoding: .utf8)
    let newID = try Self.openOnce(directory) { identity in
      let notice = try #require(identity.notice)
      #expect(notice.contains(oldID.hex) && notice.contains(identity.peerID.hex), "\(notice)")
      #expect(!FileManager.default.fileExists(atPath: directory + "/peer-id"))
      #expect(FileManager.default.fileExists(atPath: directory + "/identity"))
    }
    let sameID = try Self.openOnce(directory) { identity in #expect(identity.notice == nil) }
    #expect(sameID == newID)
  }

  /// Opens the identity, lets `check` look at it, and releases it (and its lock).
  static func openOnce(_ directory: String, _ check: (PeerIdentity) throws -> Void) throws -> PeerID {
    let identity = try PeerIdentity(directory: directory)
    try check(identity)
    return identity.peerID
  }
}
