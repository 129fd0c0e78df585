import NearbyCore

#if canImport(Glibc)
  import Glibc
#endif

extension BufferAllocator {
  /// Buffers of 1 MiB or more are mapped (`mmap`) and unmapped (`munmap`) when given back;
  /// smaller ones come from the heap. Frames are buffered whole until their last byte, and
  /// the heap keeps large freed blocks resident (glibc raises its mapping threshold each
  /// time one is freed): a burst of large partial frames from hostile peers would leave the
  /// process large for good. Only receive buffers are mapped this way: the send side reuses
  /// its buffers, where mapping each one would cost page faults every time.
  package static let mappingLarge = BufferAllocator(
    allocate: { count in
      guard count >= mappingThreshold else { return UnsafeMutableRawPointer.allocate(byteCount: count, alignment: 16) }
      let mapped = mmap(nil, count, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
      guard let mapped, mapped != MAP_FAILED else { preconditionFailure("out of memory: mmap of \(count) bytes failed (errno \(errno))") }
      return mapped
    },
    deallocate: { pointer, count in
      if count >= mappingThreshold { _ = munmap(pointer, count) } else { pointer.deallocate() }
    })

  static let mappingThreshold = 1 << 20
}
