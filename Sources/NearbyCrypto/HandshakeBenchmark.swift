/// How much time each side of a handshake spends computing (key generation, X25519,
/// signatures, hashing), measured on in-memory handshakes with no I/O.
package enum HandshakeBenchmark {
  /// Mean time per handshake of each side.
  package struct Cost: Hashable, Sendable, CustomStringConvertible {
    /// Handshakes run.
    package let handshakes: Int
    /// The initiator's mean time per handshake.
    package let initiator: Duration
    /// The responder's mean time per handshake.
    package let responder: Duration

    package var description: String {
      "handshake (\(handshakes) runs): initiator \(Self.microseconds(initiator)) µs, responder \(Self.microseconds(responder)) µs per side"
    }

    private static func microseconds(_ value: Duration) -> Int {
      Int(value.components.seconds * 1_000_000 + value.components.attoseconds / 1_000_000_000_000)
    }
  }

  /// Runs `handshakes` complete handshakes between two in-memory peers on the calling
  /// thread and times each side's calls (ephemeral key generation included).
  package static func measure<C: Clock<Duration>>(handshakes: Int, clock: C = ContinuousClock()) -> Cost {
    precondition(handshakes > 0)
    var random = SystemCryptoRandom()
    let alice = IdentityKeyPair.generate(using: &random)
    let bob = IdentityKeyPair.generate(using: &random)
    let payload = Array("bench".utf8)
    var initiatorTime = Duration.zero
    var responderTime = Duration.zero
    for _ in 0..<handshakes {
      var start = clock.now
      var initiator = Handshake(role: .initiator(expecting: bob.peerID), identity: alice, payload: payload, random: &random)
      let message1 = initiator.start().send
      initiatorTime += start.duration(to: clock.now)

      start = clock.now
      var responder = Handshake(role: .responder, identity: bob, payload: payload, random: &random)
      let message2 = responder.receive(message1).send
      responderTime += start.duration(to: clock.now)

      start = clock.now
      let message3 = initiator.receive(message2).send
      initiatorTime += start.duration(to: clock.now)

      start = clock.now
      let message4 = responder.receive(message3).send
      responderTime += start.duration(to: clock.now)

      start = clock.now
      let done = initiator.receive(message4).result
      initiatorTime += start.duration(to: clock.now)
      precondition(done != nil, "the benchmark handshake failed")
    }
    return Cost(handshakes: handshakes, initiator: initiatorTime / handshakes, responder: responderTime / handshakes)
  }
}
