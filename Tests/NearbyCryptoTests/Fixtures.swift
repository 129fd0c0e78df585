import NearbyCore
import Testing

@testable import NearbyCrypto

/// Deterministic identities and handshakes shared by the crypto tests.
enum Fixture {
  /// Seeds 00 01 ... 1f, 20 ... 3f, and so on: the same as the vectors.
  static func seed(_ index: Int) -> [UInt8] { (0..<32).map { UInt8(index * 32 + $0) } }

  static let alice = IdentityKeyPair(seedBytes: seed(0))!
  static let bob = IdentityKeyPair(seedBytes: seed(1))!
  static let carol = IdentityKeyPair(seedBytes: seed(2))!
  static let mallory = IdentityKeyPair(seedBytes: seed(3))!

  static let alicePayload = Array("name=alice;caps=0".utf8)
  static let bobPayload = Array("name=bob;caps=2".utf8)

  /// The ciphers this machine can test.
  static let availableCiphers = RecordCipher.allCases.filter(\.isAvailable)

  /// A pair of handshakes between alice (initiator) and bob, drawing ephemerals from a
  /// random stream seeded with `seed`.
  static func pair(
    seed: UInt8 = 1, expecting: PeerID? = bob.peerID, initiatorCiphers: CipherSet = .chacha20Poly1305,
    responderCiphers: CipherSet = .chacha20Poly1305, initiator: IdentityKeyPair = alice, responder: IdentityKeyPair = bob
  ) -> (initiator: Handshake, responder: Handshake) {
    var random = SeededCryptoRandom(repeating: seed)
    return (
      Handshake(role: .initiator(expecting: expecting), identity: initiator, payload: alicePayload, ciphers: initiatorCiphers, random: &random),
      Handshake(role: .responder, identity: responder, payload: bobPayload, ciphers: responderCiphers, random: &random)
    )
  }

  /// The four messages of a clean handshake (whole frames), and both results.
  static func cleanRun(seed: UInt8 = 1) -> (messages: [[UInt8]], initiator: HandshakeResult, responder: HandshakeResult) {
    var (initiator, responder) = pair(seed: seed)
    let m1 = initiator.start().send
    let m2 = responder.receive(m1).send
    let m3 = initiator.receive(m2).send
    let out4 = responder.receive(m3)
    let done = initiator.receive(out4.send)
    return ([m1, m2, m3, out4.send], done.result!, out4.result!)
  }
}

/// Outcome of driving two handshakes against each other.
struct HandshakeRun {
  var initiator: HandshakeResult?
  var responder: HandshakeResult?
  var initiatorError: HandshakeError?
  var responderError: HandshakeError?
  /// Bytes each side wrote, in order (including ERROR frames).
  var initiatorSent: [UInt8] = []
  var responderSent: [UInt8] = []
}

/// Runs a handshake to its end, delivering the n-th message (1–4) through `deliver`, which
/// may split, alter or drop it; other messages go whole.
func drive(
  _ initiator: inout Handshake, _ responder: inout Handshake,
  deliver: (_ step: Int, _ bytes: [UInt8]) -> [ArraySlice<UInt8>] = { _, bytes in [bytes[...]] }
) -> HandshakeRun {
  var run = HandshakeRun()
  func absorb(_ output: Handshake.Output, initiatorSide: Bool) {
    if initiatorSide {
      run.initiatorSent += output.send
      if let result = output.result { run.initiator = result }
      if let error = output.error { run.initiatorError = error }
    } else {
      run.responderSent += output.send
      if let result = output.result { run.responder = result }
      if let error = output.error { run.responderError = error }
    }
  }
  var pending = initiator.start().send
  run.initiatorSent = pending
  var step = 1
  var toResponder = true
  while !pending.isEmpty, step <= 4 {
    var produced: [UInt8] = []
    for chunk in deliver(step, pending) {
      if toResponder {
        guard case .awaitingMessage = responder.state else { break }
        let output = responder.receive(chunk)
        absorb(output, initiatorSide: false)
        produced += output.send
      } else {
        guard case .awaitingMessage = initiator.state else { break }
        let output = initiator.receive(chunk)
        absorb(output, initiatorSide: true)
        produced += output.send
      }
    }
    pending = produced
    toResponder.toggle()
    step += 1
  }
  // Whoever still waits sees the connection close.
  if case .awaitingMessage = initiator.state { absorb(initiator.connectionClosed(), initiatorSide: true) }
  if case .awaitingMessage = responder.state { absorb(responder.connectionClosed(), initiatorSide: false) }
  return run
}

/// The bytes split at `index`.
func split(_ bytes: [UInt8], at index: Int) -> [ArraySlice<UInt8>] { [bytes[..<index], bytes[index...]] }

/// The bytes one at a time.
func byteByByte(_ bytes: [UInt8]) -> [ArraySlice<UInt8>] { bytes.indices.map { bytes[$0...$0] } }
