import CSodium

/// A fixed-size secret (a key or a seed) in memory of its own, wiped with `sodium_memzero`
/// when the last reference goes away.
///
/// The bytes never change after creation, so sharing one instance between threads is safe
/// (hence `@unchecked Sendable`); value types that hold keys (the handshake, its result)
/// share the instance instead of copying the secret.
package final class SecretBytes: @unchecked Sendable {
  private let storage: UnsafeMutableRawBufferPointer

  /// Copies `bytes` into fresh memory. The caller wipes its own copy if it has one.
  package init(_ bytes: some Collection<UInt8>) {
    storage = .allocate(byteCount: max(bytes.count, 1), alignment: 16)
    UnsafeMutableRawBufferPointer(rebasing: storage[0..<bytes.count]).copyBytes(from: bytes)
    count = bytes.count
  }

  /// Fills `count` bytes by calling `body` on the uninitialised memory (the secret is written
  /// in place and never exists anywhere else).
  package init(count: Int, _ body: (UnsafeMutableRawBufferPointer) -> Void) {
    storage = .allocate(byteCount: max(count, 1), alignment: 16)
    self.count = count
    body(UnsafeMutableRawBufferPointer(rebasing: storage[0..<count]))
  }

  deinit {
    sodium_memzero(storage.baseAddress, storage.count)
    storage.deallocate()
  }

  /// The length in bytes.
  package let count: Int

  /// Lends the secret to `body`; the pointer is valid only inside it.
  package func withUnsafeBytes<R, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R {
    try body(UnsafeRawBufferPointer(rebasing: storage[0..<count]))
  }

  /// A pointer to the first byte, for C calls made while `self` is alive.
  var pointer: UnsafePointer<UInt8> {
    UnsafePointer(storage.baseAddress!.assumingMemoryBound(to: UInt8.self))
  }

  /// A copy, for test vectors and the key file only: a copy is not wiped.
  package var copiedBytes: [UInt8] { Array(UnsafeRawBufferPointer(rebasing: storage[0..<count])) }
}
