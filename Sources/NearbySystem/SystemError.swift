#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// A failed system call: its name and `errno`, described as
/// `connect: Connection refused (errno 111)`.
public struct SystemError: Error, Hashable, Sendable, CustomStringConvertible {
  public let call: String
  public let errno: Int32

  public init(_ call: String, errno: Int32) {
    self.call = call
    self.errno = errno
  }

  public var description: String {
    "\(call): \(Self.describe(errno))"
  }

  /// `errno`'s text and number: `No such file or directory (errno 2)`.
  package static func describe(_ code: Int32) -> String {
    "\(String(cString: strerror(code))) (errno \(code))"
  }
}

/// The outcome of a non-blocking call.
package enum IOResult<T> {
  case done(T)
  case wouldBlock
}

/// Runs a system call, retrying `EINTR`, turning `EAGAIN` into ``IOResult/wouldBlock`` and
/// other failures into ``SystemError``. `EBADF` and `EFAULT` are programming errors and trap.
@inline(__always)
package func systemCall<T: SignedInteger>(_ name: @autoclosure () -> String, _ body: () -> T) throws(SystemError) -> IOResult<T> {
  while true {
    let result = body()
    if result >= 0 { return .done(result) }
    let code = errno
    switch code {
    case EINTR: continue
    case EAGAIN: return .wouldBlock
    case EBADF, EFAULT: preconditionFailure("\(name()) failed with \(SystemError(name(), errno: code)): a programming error")
    default: throw SystemError(name(), errno: code)
    }
  }
}

/// Ignores SIGPIPE once per process: a peer that closes must give EPIPE, not kill us.
package let ignoreSIGPIPE: Void = {
  _ = signal(SIGPIPE, SIG_IGN)
}()
