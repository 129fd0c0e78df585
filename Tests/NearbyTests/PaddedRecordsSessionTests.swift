import Nearby
import NearbyCore
import NearbyCrypto
import NearbyLab
import Testing

/// What a session sends on the wire to a peer that reads PADDED records and to one that does
/// not (a build from before them), over real sockets.
@Suite("PADDED records on the wire")
struct PaddedRecordsSessionTests {
  @Test("a session pads its short records to a peer that reads them (under AES-256-GCM), and not to one that does not", arguments: [true, false])
  func padding(peerReadsThem: Bool) async throws {
    let alice = try await RunningSession.start("alice")
    let peer = try SecureTestPeer(port: alice.port)
    if !peerReadsThem { peer.ciphers.remove(.paddedRecords) }
    try await peer.joinSession(name: "mallory")
    _ = try await alice.expect("mallory joined") { if case .connected(let p, _) = $0, p.id == peer.peerID { true } else { nil } }
    let text = Array("sixty-four bytes, more or less: what a chat line or a request is".utf8)
    _ = try await alice.session.send(text, to: .peers([peer.peerID]))
    let received = await peer.readInBackground { frames in
      frames.contains { if case .message(let message) = $0 { message.body == text } else { false } }
    }
    #expect(received.error == nil)
    #expect(received.frames.contains { if case .message(let message) = $0 { message.body == text } else { false } })
    // The message's record at least (the ACCEPT's came in the read that joined).
    #expect(!received.records.isEmpty)
    let pads = peerReadsThem && peer.result?.cipher == .aes256GCM
    for record in received.records {
      if pads {
        #expect(record.type == SecureFrameType.padded.rawValue, "\(received.records)")
        #expect((record.length - 1 - 16) % 128 == 0, "\(received.records)")
      } else {
        #expect(record.type == SecureFrameType.record.rawValue, "\(received.records)")
      }
    }
    // And the other way: its records, padded or not, reach alice's application.
    peer.write(.message(Frame.Message(id: 1, sender: peer.peerID, timestamp: 0, recipients: [], body: Array("back".utf8))))
    _ = try await alice.expect("mallory's answer") { if case .message(let m) = $0, m.body == Array("back".utf8) { true } else { nil } }
    try await alice.stop()
  }
}
