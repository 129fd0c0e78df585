/// Where a decoder's buffer comes from: the heap, or what the transport gives it (it maps
/// large buffers itself, so that the memory of a frame of 2 MiB goes back to the system
/// when the frame is done or its connection is closed, whatever the allocator keeps).
package struct BufferAllocator: Sendable {
  /// Returns `byteCount` bytes, aligned to 16.
  package let allocate: @Sendable (_ byteCount: Int) -> UnsafeMutableRawPointer
  /// Gives back what ``allocate`` returned, with the same count.
  package let deallocate: @Sendable (_ pointer: UnsafeMutableRawPointer, _ byteCount: Int) -> Void

  package init(
    allocate: @escaping @Sendable (Int) -> UnsafeMutableRawPointer, deallocate: @escaping @Sendable (UnsafeMutableRawPointer, Int) -> Void
  ) {
    self.allocate = allocate
    self.deallocate = deallocate
  }

  /// `UnsafeMutableRawPointer.allocate` and `deallocate`.
  package static let heap = BufferAllocator(
    allocate: { UnsafeMutableRawPointer.allocate(byteCount: $0, alignment: 16) }, deallocate: { pointer, _ in pointer.deallocate() })
}
