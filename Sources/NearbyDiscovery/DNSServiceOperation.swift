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
    let result = DNSServiceProcessResult(ref)
    if result != Int32(kDNSServiceErr_NoError), self.ref != nil {
      onFailure(DNSServiceError(code: result, operation: "DNSServiceProcessResult"))
    }
  }

  /// Stops watching and deallocates the ref, then releases the context. Idempotent; loop
  /// thread only (a callback may call it for its own operation).
  func cancel() {
    guard let ref else { return }
    self.ref = nil
    loop.deregister(fd)
    DNSServiceRefDeallocate(ref)
    context?.release()
    context = nil
  }
}

/// Avahi's compatibility layer prints a warning on the first call unless this is set.
let silenceAvahiCompatibilityWarning: Void = {
  setenv("AVAHI_COMPAT_NOWARN", "1", 1)
}()

#if canImport(Glibc)
  import Glibc
#endif
