import NearbyCore
import Testing

@testable import NearbyCrypto

@Suite("Handshake: a man in the middle shows up in the verification codes")
struct ManInTheMiddleTests {
  /// Mallory answers alice as the "bob" she dialled by address, and dials bob as herself:
  /// two complete handshakes, and she relays the application traffic between them.
  @Test("a relay that terminates both sides leaves alice and bob with different codes", arguments: UInt8(1)...UInt8(24))
  func terminatingRelay(seed: UInt8) throws {
    var random = SeededCryptoRandom(repeating: seed)
    var alice = Handshake(role: .initiator(expecting: nil), identity: Fixture.alice, payload: Fixture.alicePayload, random: &random)
    var malloryAsBob = Handshake(role: .responder, identity: Fixture.mallory, payload: Fixture.bobPayload, random: &random)
    var malloryAsAlice = Handshake(role: .initiator(expecting: nil), identity: Fixture.mallory, payload: Fixture.alicePayload, random: &random)
    var bob = Handshake(role: .responder, identity: Fixture.bob, payload: Fixture.bobPayload, random: &random)
    let left = drive(&alice, &malloryAsBob)
    let right = drive(&malloryAsAlice, &bob)
    let aliceSees = try #require(left.initiator)
    let bobSees = try #require(right.responder)
    #expect(aliceSees.verificationCode != bobSees.verificationCode)
    // Each real peer agrees with Mallory, which is why people compare codes with each other.
    #expect(aliceSees.verificationCode == left.responder?.verificationCode)
    #expect(bobSees.verificationCode == right.initiator?.verificationCode)
    // And the peer ids tell it too, for anyone who looks.
    #expect(aliceSees.remotePeerID == Fixture.mallory.peerID)
    #expect(bobSees.remotePeerID == Fixture.mallory.peerID)
  }

  @Test("a relay that forwards bytes unchanged leaves equal codes and cannot read the records", arguments: UInt8(1)...UInt8(8))
  func forwardingRelay(seed: UInt8) throws {
    var (alice, bob) = Fixture.pair(seed: seed)
    var seen: [UInt8] = []
    let run = drive(&alice, &bob) { _, bytes in
      seen += bytes
      return [bytes[...]]
    }
    let a = try #require(run.initiator)
    let b = try #require(run.responder)
    #expect(a.verificationCode == b.verificationCode)
    var records: [UInt8] = []
    let secret = Array("the plan is at noon".utf8)
    a.makeSealer().seal(secret, into: &records)
    seen += records
    // Nothing the relay saw contains the plaintext, the payloads or the identity keys.
    for needle in [secret, Fixture.alicePayload, Fixture.bobPayload, Fixture.alice.publicKey.bytes, Fixture.bob.publicKey.bytes] {
      #expect(!contains(seen, needle))
    }
  }

  @Test("the responder cannot steer the initiator's code with anything it sends after the reveal")
  func noGrinding() throws {
    // Mallory, answering alice, may choose her message-4 identity and payload after seeing
    // alice's ephemeral key. With the code fixed at the reveal, every choice gives the same
    // code, so she cannot search for one that matches bob's.
    var codes: Set<VerificationCode> = []
    for attempt in 0..<64 {
      let ephemeralI = EphemeralKeyPair(secretKey: SecretBytes([UInt8](repeating: 1, count: 32)))
      let ephemeralM = EphemeralKeyPair(secretKey: SecretBytes([UInt8](repeating: 2, count: 32)))
      var alice = Handshake(role: .initiator(expecting: nil), identity: Fixture.alice, payload: [], ephemeral: ephemeralI)
      var mallory = Handshake(role: .responder, identity: Fixture.mallory, payload: Array("try \(attempt)".utf8), ephemeral: ephemeralM)
      codes.insert(try #require(drive(&alice, &mallory).initiator).verificationCode)
    }
    #expect(codes.count == 1)
  }

  private func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
    guard needle.count <= haystack.count else { return false }
    return (0...(haystack.count - needle.count)).contains { haystack[$0..<($0 + needle.count)].elementsEqual(needle) }
  }
}
