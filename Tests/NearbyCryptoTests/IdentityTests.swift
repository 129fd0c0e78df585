import NearbyCore
import Testing

@testable import NearbyCrypto

@Suite("Identity keys and key files")
struct IdentityTests {
  @Test("the peer id is the domain-separated BLAKE2b-128 of the public key")
  func peerID() {
    let key = Fixture.alice.publicKey
    let expected = PeerID(bytes: Blake2b.hash([Array("nearby-peer-id-v2".utf8), key.bytes], outputCount: 16))!
    #expect(key.peerID == expected)
    #expect(key.owns(expected))
    #expect(!key.owns(Fixture.bob.peerID))
    #expect(Fixture.alice.peerID != Fixture.bob.peerID)
    // Without the label it would be another id: the label is really hashed.
    #expect(key.peerID != PeerID(bytes: Blake2b.hash([key.bytes], outputCount: 16))!)
  }

  @Test("the same seed gives the same key pair; signatures verify only for their message and key")
  func signatures() {
    let again = IdentityKeyPair(seedBytes: Fixture.seed(0))!
    #expect(again.publicKey == Fixture.alice.publicKey)
    let message = Array("hello".utf8)
    let signature = Fixture.alice.sign(message)
    #expect(signature.count == 64)
    #expect(Fixture.alice.publicKey.isValidSignature(signature, for: message))
    #expect(!Fixture.alice.publicKey.isValidSignature(signature, for: Array("hellp".utf8)))
    #expect(!Fixture.bob.publicKey.isValidSignature(signature, for: message))
    var bad = signature
    bad[10] ^= 1
    #expect(!Fixture.alice.publicKey.isValidSignature(bad, for: message))
    #expect(!Fixture.alice.publicKey.isValidSignature(Array(signature.dropLast()), for: message))
  }

  @Test("generated identities differ and are deterministic with a seeded random source")
  func generation() {
    var first = SeededCryptoRandom(repeating: 5)
    var second = SeededCryptoRandom(repeating: 5)
    let a = IdentityKeyPair.generate(using: &first)
    #expect(a.publicKey == IdentityKeyPair.generate(using: &second).publicKey)
    #expect(a.publicKey != IdentityKeyPair.generate(using: &first).publicKey)
    var system = SystemCryptoRandom()
    #expect(IdentityKeyPair.generate(using: &system).publicKey != IdentityKeyPair.generate(using: &system).publicKey)
  }

  @Test("a key file round-trips and names the peer id")
  func keyFileRoundTrip() throws {
    let text = IdentityKeyFile.encode(Fixture.alice)
    #expect(text.contains("nearby-identity-key 2\n"))
    #expect(text.contains("peer-id \(Fixture.alice.peerID.hex)\n"))
    let decoded = try IdentityKeyFile.decode(text)
    #expect(decoded.publicKey == Fixture.alice.publicKey)
    // CRLF line ends, extra blank lines and comments are fine; peer-id is optional.
    let seedLine = text.split(separator: "\n").first { $0.hasPrefix("seed ") }!
    let minimal = "\r\n# mine\r\n  nearby-identity-key 2  \r\n\r\n\(seedLine)\r\n"
    #expect(try IdentityKeyFile.decode(minimal).publicKey == Fixture.alice.publicKey)
  }

  static let seedLine = "seed " + Fixture.seed(0).hexString

  @Test(
    "key file errors name the problem",
    arguments: [
      ("", IdentityKeyFileError.empty),
      ("# only a comment\n", .empty),
      ("hello\n", .notAKeyFile(line: 1)),
      ("nearby-identity-key 3\n\(seedLine)\n", .unsupportedVersion("3")),
      ("nearby-identity-key 2\n", .missingSeed),
      ("nearby-identity-key 2\nseed 00\n", .malformedLine(line: 2, reason: "the seed must be 64 hexadecimal digits")),
      ("nearby-identity-key 2\n\(seedLine) extra\n", .malformedLine(line: 2, reason: "expected a field name and one value separated by a space")),
      ("nearby-identity-key 2\n\(seedLine)\n\(seedLine)\n", .duplicateField("seed", line: 3)),
      ("nearby-identity-key 2\ncolour blue\n", .unknownField("colour", line: 2)),
      (
        "nearby-identity-key 2\npeer-id \(Fixture.bob.peerID.hex)\n\(seedLine)\n",
        .peerIDMismatch(file: Fixture.bob.peerID, derived: Fixture.alice.peerID)
      ),
    ])
  func keyFileErrors(text: String, expected: IdentityKeyFileError) {
    #expect(throws: expected) { try IdentityKeyFile.decode(text) }
    // No description quotes the seed.
    #expect(!expected.description.contains(Fixture.seed(0).hexString))
  }
}
