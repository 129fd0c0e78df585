import NearbyCore
import Testing

@testable import NearbyCrypto

/// Bit 2 of the cipher byte (PROTOCOL.md 3.8): each side learns whether the other reads
/// PADDED records, and nobody in the middle can take that bit away unnoticed.
@Suite("Handshake: announcing PADDED records")
struct HandshakePaddingTests {
  /// The cipher both sides announce: AES-256-GCM where this CPU runs it (what the sealer
  /// pads under), else ChaCha20-Poly1305.
  static let cipherBits: CipherSet = RecordCipher.aes256GCM.isAvailable ? [.chacha20Poly1305, .aes256GCM] : .chacha20Poly1305

  @Test(
    "each side learns whether the other reads PADDED records; the sealer pads only then, and only under AES-256-GCM",
    arguments: [(true, true), (true, false), (false, true), (false, false)])
  func negotiation(initiatorReads: Bool, responderReads: Bool) throws {
    var (initiator, responder) = Fixture.pair(
      initiatorCiphers: Self.cipherBits.union(initiatorReads ? .paddedRecords : []),
      responderCiphers: Self.cipherBits.union(responderReads ? .paddedRecords : []))
    let run = drive(&initiator, &responder)
    let initiatorResult = try #require(run.initiator)
    let responderResult = try #require(run.responder)
    #expect(initiatorResult.peerReadsPaddedRecords == responderReads)
    #expect(responderResult.peerReadsPaddedRecords == initiatorReads)
    let aes = initiatorResult.cipher == .aes256GCM
    for (from, to, peerReads) in [(initiatorResult, responderResult, responderReads), (responderResult, initiatorResult, initiatorReads)] {
      let sealer = from.makeSealer()
      #expect(sealer.padsShortRecords == (peerReads && aes))
      var bytes: [UInt8] = []
      sealer.seal([1, 2, 3], into: &bytes)
      #expect(bytes[4] == (peerReads && aes ? SecureFrameType.padded : SecureFrameType.record).rawValue)
      let opener = to.makeOpener()
      opener.append(bytes)
      #expect(try opener.next() == [1, 2, 3])
    }
  }

  @Test("a man in the middle who clears the bit in message 1 or 2 makes the handshake fail", arguments: [(1, 12), (2, 7)])
  func strippedBit(step: Int, offset: Int) throws {
    var (initiator, responder) = Fixture.pair(
      initiatorCiphers: Self.cipherBits.union(.paddedRecords), responderCiphers: Self.cipherBits.union(.paddedRecords))
    var stripped = false
    let run = drive(&initiator, &responder) { index, bytes in
      guard index == step else { return [bytes[...]] }
      var altered = bytes
      #expect(altered[offset] & CipherSet.paddedRecords.rawValue != 0, "the byte at \(offset) of message \(step) is its cipher byte")
      altered[offset] &= ~CipherSet.paddedRecords.rawValue
      stripped = true
      return [altered[...]]
    }
    #expect(stripped)
    #expect(run.initiator == nil || run.responder == nil, "both completed with the bit stripped")
    #expect(run.initiatorError != nil || run.responderError != nil)
  }

  @Test("what this machine announces includes the bit")
  func announced() {
    #expect(CipherSet.locallySupported.contains(.paddedRecords))
    #expect(CipherSet.locallySupported.negotiated(with: .chacha20Poly1305) == .chacha20Poly1305, "the bit is not a cipher")
  }
}
