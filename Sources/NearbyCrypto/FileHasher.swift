import CSodium

/// BLAKE2b-256 of a file's bytes, fed as they are read or written (libsodium's incremental
/// `crypto_generichash_init`/`_update`/`_final`). Unkeyed and without a label, so that it
/// equals `b2sum -l 256` and people can check a file with other tools (PROTOCOL.md 13.4).
///
/// Not thread-safe: one owner at a time (a transfer's file queue).
package final class FileHasher: @unchecked Sendable {
  private let state: UnsafeMutableRawPointer
  /// Bytes hashed so far.
  package private(set) var count: UInt64 = 0

  package init() {
    Sodium.ensureInitialized()
    // The state type is over-aligned in C (64 bytes), so Swift imports it as opaque.
    state = UnsafeMutableRawPointer.allocate(byteCount: crypto_generichash_statebytes(), alignment: 64)
    let status = crypto_generichash_init(OpaquePointer(state), nil, 0, 32)
    precondition(status == 0, "crypto_generichash_init failed")
  }

  deinit { state.deallocate() }

  package func update(_ bytes: UnsafeRawBufferPointer) {
    guard let base = bytes.baseAddress, bytes.count > 0 else { return }
    _ = crypto_generichash_update(OpaquePointer(state), base.assumingMemoryBound(to: UInt8.self), UInt64(bytes.count))
    count += UInt64(bytes.count)
  }

  package func update(_ bytes: [UInt8]) { bytes.withUnsafeBytes { update($0) } }

  /// The 32-byte hash. The hasher is spent afterwards.
  package func finalize() -> [UInt8] {
    var output = [UInt8](repeating: 0, count: 32)
    output.withUnsafeMutableBufferPointer { _ = crypto_generichash_final(OpaquePointer(state), $0.baseAddress!, 32) }
    return output
  }

  /// The hash of `bytes` at once.
  package static func hash(_ bytes: [UInt8]) -> [UInt8] {
    let hasher = FileHasher()
    hasher.update(bytes)
    return hasher.finalize()
  }
}
