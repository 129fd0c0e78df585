#if canImport(Glibc)
  import Glibc
#endif

/// Plain blocking TCP sockets on 127.0.0.1, for tests that play a peer, a man in the middle,
/// a silent listener or a broken link by hand: the `sockaddr_in` boilerplate in one place.
package enum LoopbackSocket {
  /// 127.0.0.1:`port` (0: any free port).
  package static func address(port: UInt16) -> sockaddr_in {
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = port.bigEndian
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    return address
  }

  /// A socket listening on a free port of 127.0.0.1. Connections complete in the kernel's
  /// backlog whether or not anybody accepts them.
  /// - Returns: the descriptor (the caller closes it) and the port.
  /// - Throws: ``LoopbackSocketError`` naming the call that failed and its errno.
  package static func listening(backlog: Int32 = 16, reuseAddress: Bool = false) throws -> (fd: Int32, port: UInt16) {
    try bound(listening: backlog, reuseAddress: reuseAddress)
  }

  /// A port of 127.0.0.1 that refuses connections for as long as the returned descriptor
  /// is open: bound, never listening. (A port bound and closed again can be taken by
  /// another test of a parallel run, which then accepts the connection.)
  /// - Returns: the descriptor (the caller closes it) and the port.
  package static func refusing() throws -> (fd: Int32, port: UInt16) { try bound(listening: nil) }

  /// A socket bound to a free port of 127.0.0.1, listening with `backlog` unless it is nil.
  private static func bound(listening backlog: Int32?, reuseAddress: Bool = false) throws -> (fd: Int32, port: UInt16) {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw LoopbackSocketError("socket failed: errno \(errno)") }
    if reuseAddress {
      var yes: Int32 = 1
      setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
    }
    var address = address(port: 0)
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let failed = withUnsafeMutablePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer -> String? in
        if bind(fd, pointer, length) != 0 { return "bind" }
        if let backlog, listen(fd, backlog) != 0 { return "listen" }
        if getsockname(fd, pointer, &length) != 0 { return "getsockname" }
        return nil
      }
    }
    if let failed {
      let code = errno
      close(fd)
      throw LoopbackSocketError("binding 127.0.0.1: \(failed) failed: errno \(code)")
    }
    return (fd, UInt16(bigEndian: address.sin_port))
  }

  /// A socket connected to 127.0.0.1:`port`, from the address `source` if given.
  /// - Throws: ``LoopbackSocketError`` naming the call that failed and its errno.
  package static func connected(to port: UInt16, receiveBuffer: Int32? = nil, source: String? = nil) throws -> Int32 {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw LoopbackSocketError("socket failed: errno \(errno)") }
    if var size = receiveBuffer { setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size)) }
    if let source {
      var local = address(port: 0)
      local.sin_addr.s_addr = inet_addr(source)
      try call(fd, local, "bind to \(source)") { bind($0, $1, $2) }
    }
    try call(fd, address(port: port), "connect to 127.0.0.1:\(port)") { connect($0, $1, $2) }
    return fd
  }

  /// `body` (bind or connect) on `fd` with `address`; closes `fd` and throws when it fails.
  /// - Throws: ``LoopbackSocketError`` naming `what` and the errno.
  private static func call(
    _ fd: Int32, _ address: sockaddr_in, _ what: String, _ body: (Int32, UnsafePointer<sockaddr>, socklen_t) -> Int32
  ) throws {
    var address = address
    let result = withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    guard result == 0 else {
      let code = errno
      close(fd)
      throw LoopbackSocketError("\(what) failed: errno \(code)")
    }
  }
}

/// A loopback socket could not be made (the system call and its errno).
package struct LoopbackSocketError: Error, CustomStringConvertible {
  package let description: String
  package init(_ description: String) { self.description = description }
}
