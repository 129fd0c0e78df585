/// How fast this machine seals records, for `nearby bench`. The only code in the module
/// that reads a clock, and it takes the clock as a parameter.
package enum AEADBenchmark {
  /// The outcome of one run.
  package struct Rate: Hashable, Sendable, CustomStringConvertible {
    /// The cipher measured.
    package let cipher: RecordCipher
    /// Plaintext bytes per record.
    package let size: Int
    /// Records sealed.
    package let records: Int
    /// The time they took.
    package let elapsed: Duration
    /// Whether each record's plaintext was also hashed (BLAKE2b-256, as a file's bytes are).
    package var hashed = false

    /// ``elapsed`` in seconds.
    package var seconds: Double {
      Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    }
    /// Records sealed per second.
    package var recordsPerSecond: Double { Double(records) / seconds }
    /// Plaintext bytes sealed per second.
    package var bytesPerSecond: Double { recordsPerSecond * Double(size) }

    package var description: String {
      let megabytes = (bytesPerSecond / 1e6 * 10).rounded() / 10
      let thousands = (recordsPerSecond / 1e3 * 10).rounded() / 10
      return "\(hashed ? "BLAKE2b + " : "")\(cipher) \(size) B: \(thousands)k records/s, \(megabytes) MB/s"
    }
  }

  /// Seals `size`-byte records with ``RecordSealer`` into a reused buffer for about
  /// `duration`, on the calling thread.
  /// - Parameters:
  ///   - cipher: must be available on this CPU (``RecordCipher/isAvailable``).
  ///   - size: 1 to 65 536 bytes of plaintext per record.
  ///   - hashing: also feed each record's plaintext to one ``FileHasher`` before sealing it:
  ///     the work a file's sender does on every byte (and its receiver, opening instead).
  ///   - clock: the clock to time with.
  package static func sealRate<C: Clock<Duration>>(
    cipher: RecordCipher, size: Int, duration: Duration, hashing: Bool = false, clock: C = ContinuousClock()
  ) -> Rate {
    precondition(cipher.isAvailable, "\(cipher) is not available on this CPU")
    precondition((1...SecureProtocol.maximumRecordPlaintext).contains(size), "size must be 1...65536")
    var random = SystemCryptoRandom()
    let sealer = RecordSealer(cipher: cipher, key: random.secret(AEAD.keyCount))
    let plaintext = random.bytes(size)
    let output = UnsafeMutableRawBufferPointer.allocate(byteCount: RecordSealer.sealedCount(plaintextCount: size), alignment: 16)
    defer { output.deallocate() }
    // Batches of about 1 MiB (at least 8 records) between clock readings.
    let batch = max(8, (1 << 20) / size)
    var records = 0
    let hasher = hashing ? FileHasher() : nil
    let start = clock.now
    var elapsed = Duration.zero
    plaintext.withUnsafeBytes { plaintext in
      repeat {
        for _ in 0..<batch {
          hasher?.update(plaintext)
          sealer.seal(plaintext, into: output)
        }
        records += batch
        elapsed = start.duration(to: clock.now)
      } while elapsed < duration
    }
    var rate = Rate(cipher: cipher, size: size, records: records, elapsed: elapsed)
    rate.hashed = hashing
    return rate
  }
}
