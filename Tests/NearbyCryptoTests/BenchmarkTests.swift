import Testing

@testable import NearbyCrypto

@Suite("Benchmarks (what nearby bench calls)")
struct BenchmarkTests {
  @Test("sealRate seals for about the requested time and reports consistent figures", arguments: Fixture.availableCiphers)
  func sealRate(cipher: RecordCipher) {
    let rate = AEADBenchmark.sealRate(cipher: cipher, size: 1024, duration: .milliseconds(20))
    #expect(rate.records >= 8)
    #expect(rate.elapsed >= .milliseconds(20))
    #expect(abs(rate.bytesPerSecond - rate.recordsPerSecond * 1024) < 1)
    #expect(rate.description.hasPrefix("\(cipher) 1024 B: "))
  }

  @Test("sealRate with hashing says so in its figures", arguments: Fixture.availableCiphers)
  func sealRateHashing(cipher: RecordCipher) {
    let plain = AEADBenchmark.sealRate(cipher: cipher, size: 65_536, duration: .milliseconds(20))
    let hashed = AEADBenchmark.sealRate(cipher: cipher, size: 65_536, duration: .milliseconds(20), hashing: true)
    #expect(hashed.hashed && !plain.hashed)
    #expect(hashed.records >= 8 && hashed.elapsed >= .milliseconds(20))
    #expect(hashed.description.hasPrefix("BLAKE2b + \(cipher) 65536 B: "))
    #expect(plain.description.hasPrefix("\(cipher) 65536 B: "))
  }

  @Test("the handshake benchmark runs complete handshakes and times both sides")
  func handshake() {
    let cost = HandshakeBenchmark.measure(handshakes: 3)
    #expect(cost.handshakes == 3)
    #expect(cost.initiator > .zero)
    #expect(cost.responder > .zero)
    #expect(cost.description.contains("initiator"))
  }
}
