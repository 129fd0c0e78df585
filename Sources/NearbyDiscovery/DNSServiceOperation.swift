import CDNSSD
import NearbyTransport

/// One `DNSServiceRef` watched by the event loop.
///
/// `DNSServiceProcessResult` runs only when `DNSServiceRefSockFD` is readable, on the loop
/// thread, so it never blocks. The ref is deallocated exactly once, after its descriptor
/// is no longer watched; the callback context (retained here) is released only then, so a
/// callback can never see a freed object.
final class DNSServiceOperation: EventLoopHandler {
  private var ref: DNSServiceRef?
  private let fd: Int32
  private let loop: EventLoop
  private var context: Unmanaged<AnyObject>?
  /// Called (on the loop) when `DNSServiceProcessResult` fails, typically because the daemon went away.
  private let onFailure: (DNSServiceError) -> Void

  /// Starts watching a ref created with `context` as its callback context. Loop thread only.
  /// - Parameter context: retained until ``cancel()``.
  init(ref: DNSServiceRef, context: Unmanaged<AnyObject>, loop: EventLoop, onFailure: @escaping (DNSServiceError) -> Void) throws {
    self.ref = ref
    self.context = context
    self.loop = loop
    self.onFailure = onFailure
    fd = DNSServiceRefSockFD(ref)
    guard fd >= 0 else {
      DNSServiceRefDeallocate(ref)
      context.release()
      throw DNSServiceError(code: Int32(kDNSServiceErr_BadReference), operation: "DNSServiceRefSockFD")
    }
    do {
      try loop.register(fd, events: 0x001, handler: self)  // EPOLLIN
    } catch {
      DNSServiceRefDeallocate(ref)
      context.release()
      self.ref = nil
      self.context = nil
      throw error
    }
  }

  /// The ref, for calls such as `DNSServiceUpdateRecord`. Loop thread only.
  var serviceRef: DNSServiceRef? { ref }

  func handle(events: UInt32) {
    guard let ref else { return }
    Self.processing += 1
    let result = DNSServiceProcessResult(ref)
    Self.processing -= 1
    let failed = result != Int32(kDNSServiceErr_NoError) && self.ref != nil
    if Self.processing == 0 { Self.deallocatePending() }
    if failed { onFailure(DNSServiceError(code: result, operation: "DNSServiceProcessResult")) }
  }

  /// Stops watching and deallocates the ref, then releases the context. Idempotent; loop
  /// thread only. Called from a callback (while `DNSServiceProcessResult` runs, for this ref
  /// or another), the deallocation waits until that call has returned: the library is never
  /// asked to free a ref in the middle of dispatching.
  func cancel() {
    guard let ref else { return }
    self.ref = nil
    loop.deregister(fd)
    let retained = context
    context = nil
    if Self.processing > 0 {
      Self.pending.append((ref, retained))
    } else {
      DNSServiceRefDeallocate(ref)
      retained?.release()
    }
  }

  // Loop thread only (every DNS-SD call of the process runs on an event loop thread, and a
  // process has one loop per session; the counters are per thread).
  private nonisolated(unsafe) static var processingByThread: [UInt64: Int] = [:]
  private static let lock = NSLockLike()

  private static var processing: Int {
    get { lock.withLock { processingByThread[currentThread, default: 0] } }
    set { lock.withLock { processingByThread[currentThread] = newValue } }
  }

  private nonisolated(unsafe) static var pendingByThread: [UInt64: [(DNSServiceRef, Unmanaged<AnyObject>?)]] = [:]

  private static var pending: [(DNSServiceRef, Unmanaged<AnyObject>?)] {
    get { lock.withLock { pendingByThread[currentThread, default: []] } }
    set { lock.withLock { pendingByThread[currentThread] = newValue } }
  }

  private static var currentThread: UInt64 { UInt64(pthread_self()) }

  private static func deallocatePending() {
    let work = pending
    guard !work.isEmpty else { return }
    pending = []
    for (ref, context) in work {
      DNSServiceRefDeallocate(ref)
      context?.release()
    }
  }
}

/// A tiny mutex for the per-thread bookkeeping above.
final class NSLockLike: @unchecked Sendable {
  private var mutex = pthread_mutex_t()
  init() { pthread_mutex_init(&mutex, nil) }
  func withLock<T>(_ body: () -> T) -> T {
    pthread_mutex_lock(&mutex)
    defer { pthread_mutex_unlock(&mutex) }
    return body()
  }
}

/// Prepares the process for Avahi's compatibility layer; must run before its first call.
///
/// - It prints a warning on the first call unless `AVAHI_COMPAT_NOWARN` is set.
/// - Its `DNSServiceRef`s are allocated with `malloc` and their callback pointers are never
///   initialized (avahi 0.8, `sdref_new` in `compat.c`): when the daemon goes away, every
///   ref's client-failure handler calls the first of those pointers that is not NULL — for
///   a resolve or query ref, a pointer to whatever the memory held before. That crashed the
///   process when its avahi-daemon restarted while it was resolving a peer. Avahi lets a
///   program choose its allocator (`avahi_set_allocator`, looked up at run time so that
///   macOS's own DNS-SD is unaffected): with zero-filled allocations the unset pointers are
///   NULL and the right callback gets the error.
let silenceAvahiCompatibilityWarning: Void = {
  setenv("AVAHI_COMPAT_NOWARN", "1", 1)
  AvahiAllocations.zeroFill()
}()

enum AvahiAllocations {
  /// Calls `avahi_set_allocator` with a zero-filling `malloc`, if the process has Avahi.
  /// Once (from ``silenceAvahiCompatibilityWarning``): Avahi keeps the table, so it is never freed.
  static func zeroFill() {
    guard let process = dlopen(nil, RTLD_NOW), let symbol = dlsym(process, "avahi_set_allocator") else { return }
    // `AvahiAllocator` of avahi-common/malloc.h: malloc, free, realloc, calloc.
    let malloc: @convention(c) (Int) -> UnsafeMutableRawPointer? = zeroFilledMalloc
    let free: @convention(c) (UnsafeMutableRawPointer?) -> Void = plainFree
    let realloc: @convention(c) (UnsafeMutableRawPointer?, Int) -> UnsafeMutableRawPointer? = plainRealloc
    let calloc: @convention(c) (Int, Int) -> UnsafeMutableRawPointer? = plainCalloc
    let table = UnsafeMutablePointer<UnsafeRawPointer?>.allocate(capacity: 4)
    table[0] = unsafeBitCast(malloc, to: UnsafeRawPointer.self)
    table[1] = unsafeBitCast(free, to: UnsafeRawPointer.self)
    table[2] = unsafeBitCast(realloc, to: UnsafeRawPointer.self)
    table[3] = unsafeBitCast(calloc, to: UnsafeRawPointer.self)
    typealias SetAllocator = @convention(c) (UnsafeRawPointer?) -> Void
    unsafeBitCast(symbol, to: SetAllocator.self)(UnsafeRawPointer(table))
  }
}

private func zeroFilledMalloc(_ size: Int) -> UnsafeMutableRawPointer? { calloc(1, max(size, 1)) }
private func plainFree(_ pointer: UnsafeMutableRawPointer?) { free(pointer) }
private func plainRealloc(_ pointer: UnsafeMutableRawPointer?, _ size: Int) -> UnsafeMutableRawPointer? { realloc(pointer, size) }
private func plainCalloc(_ count: Int, _ size: Int) -> UnsafeMutableRawPointer? { calloc(count, size) }

#if canImport(Glibc)
  import Glibc
#endif
