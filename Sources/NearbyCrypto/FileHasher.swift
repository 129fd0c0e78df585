import CSodium

/// BLAKE2b (256 bits for a file, 512 for an envelope's signature) of bytes fed as they come: a file's as it is read or written (libsodium's incremental
/// `crypto_generichash_init`/`_update`/`_final`). Unkeyed and without a label, so that it
/// equals `b2sum -l 256` and people can check a file with other tools (PROTOCOL.md 13.4).
///
/// Not thread-safe: one owner at a time (a transfer's file queue).
package final class FileHasher: @unchecked Sendable {
  private let state: UnsafeMutableRawPointer
  /// Bytes hashed so far.
  package private(set) var count: UInt64 = 0

  /// Bytes of the hash.
  package let outputCount: Int

  /// - Parameter outputCount: 16 to 64 bytes (32 for files, 64 for envelopes' signatures).
  package init(outputCount: Int = 32) {
    Sodium.ensureInitialized()
    precondition((16...64).contains(outputCount), "BLAKE2b output of \(outputCount) bytes")
    self.outputCount = outputCount
    // The state type is over-aligned in C (64 bytes), so Swift imports it as opaque.
    state = UnsafeMutableRawPointer.allocate(byteCount: crypto_generichash_statebytes(), alignment: 64)
    let status = crypto_generichash_init(OpaquePointer(state), nil, 0, outputCount)
    precondition(status == 0, "crypto_generichash_init failed")
  }

  deinit { state.deallocate() }

  package func update(_ bytes: UnsafeRawBufferPointer) {
    guard let base = bytes.baseAddress, bytes.count > 0 else { return }
    _ = crypto_generichash_update(OpaquePointer(state), base.assumingMemoryBound(to: UInt8.self), UInt64(bytes.count))
    count += UInt64(bytes.count)
  }

  package func update(_ bytes: [UInt8]) { bytes.withUnsafeBytes { update($0) } }

  /// The hash (``outputCount`` bytes). The hasher is spent afterwards.
  package func finalize() -> [UInt8] {
    var output = [UInt8](repeating: 0, count: outputCount)
    output.withUnsafeMutableBufferPointer { _ = crypto_generichash_final(OpaquePointer(state), $0.baseAddress!, outputCount) }
    return output
  }

  /// The hash of `bytes` at once.
  package static func hash(_ bytes: [UInt8]) -> [UInt8] {
    let hasher = FileHasher()
    hasher.update(bytes)
    return hasher.finalize()
  }
}
