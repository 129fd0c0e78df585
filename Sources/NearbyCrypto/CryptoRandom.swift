import CSodium

/// A source of random bytes for keys, nonces and content keys.
///
/// Everything in `NearbyCrypto` that needs randomness takes one, so tests and test vectors
/// can be deterministic (``SeededCryptoRandom``) while real sessions use
/// ``SystemCryptoRandom``.
package protocol CryptoRandom {
  /// Fills `buffer` with random bytes.
  mutating func fill(_ buffer: UnsafeMutableRawBufferPointer)
}

extension CryptoRandom {
  /// `count` random bytes.
  package mutating func bytes(_ count: Int) -> [UInt8] {
    var result = [UInt8](repeating: 0, count: count)
    result.withUnsafeMutableBytes { fill($0) }
    return result
  }

  /// A secret of `count` random bytes, written straight into wiped-on-release memory.
  package mutating func secret(_ count: Int) -> SecretBytes {
    SecretBytes(count: count) { fill($0) }
  }
}

/// The operating system's random source, through libsodium (`randombytes_buf`: the
/// `getrandom` system call on Linux).
package struct SystemCryptoRandom: CryptoRandom, Sendable {
  /// The system's source; it has no state.
  package init() {}

  /// Fills `buffer` from `randombytes_buf`.
  package mutating func fill(_ buffer: UnsafeMutableRawBufferPointer) {
    Sodium.ensureInitialized()
    guard let base = buffer.baseAddress else { return }
    randombytes_buf(base, buffer.count)
  }
}

/// A deterministic stream for tests and vectors: call *n* fills
/// `randombytes_buf_deterministic` with the seed `BLAKE2b-256(key: seed, message: u64be(n))`.
/// Never use it for real keys.
package struct SeededCryptoRandom: CryptoRandom, Sendable {
  private let seed: [UInt8]
  private var counter: UInt64 = 0

  /// - Parameter seed: 32 bytes.
  package init(seed: [UInt8]) {
    precondition(seed.count == 32, "a SeededCryptoRandom seed has 32 bytes, not \(seed.count)")
    self.seed = seed
  }

  /// A seed made of `byte` repeated 32 times, for short test code.
  package init(repeating byte: UInt8) {
    self.init(seed: [UInt8](repeating: byte, count: 32))
  }

  /// Fills `buffer` with the next call's deterministic bytes.
  package mutating func fill(_ buffer: UnsafeMutableRawBufferPointer) {
    Sodium.ensureInitialized()
    var index = [UInt8]()
    index.append(bigEndian: counter)
    counter &+= 1
    guard let base = buffer.baseAddress else { return }
    let callSeed = Blake2b.hash([index], key: seed)
    callSeed.withUnsafeBufferPointer { randombytes_buf_deterministic(base, buffer.count, $0.baseAddress!) }
  }
}
