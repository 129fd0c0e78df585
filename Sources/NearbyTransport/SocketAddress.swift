import NearbyCore

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// An IPv4 or IPv6 socket address.
package struct SocketAddress: Sendable, CustomStringConvertible {
  var storage = sockaddr_storage()
  package private(set) var length: socklen_t = 0

  /// Parses a numeric address (no name resolution).
  /// - Returns: `nil` when `host` is not a numeric IPv4 or IPv6 address.
  package init?(host: String, port: UInt16, interfaceIndex: UInt32 = 0) {
    var storage = sockaddr_storage()
    var v4 = in_addr()
    var v6 = in6_addr()
    // A "%scope" suffix is allowed on IPv6 link-local addresses.
    var address = host
    var scope = interfaceIndex
    if let percent = host.firstIndex(of: "%") {
      address = String(host[..<percent])
      let name = String(host[host.index(after: percent)...])
      scope = UInt32(name) ?? if_nametoindex(name)
    }
    if inet_pton(AF_INET, address, &v4) == 1 {
      var sin = sockaddr_in()
      sin.sin_family = sa_family_t(AF_INET)
      sin.sin_port = port.bigEndian
      sin.sin_addr = v4
      withUnsafeMutableBytes(of: &storage) { raw in withUnsafeBytes(of: sin) { raw.copyMemory(from: $0) } }
      length = socklen_t(MemoryLayout<sockaddr_in>.size)
    } else if inet_pton(AF_INET6, address, &v6) == 1 {
      var sin6 = sockaddr_in6()
      sin6.sin6_family = sa_family_t(AF_INET6)
      sin6.sin6_port = port.bigEndian
      sin6.sin6_addr = v6
      sin6.sin6_scope_id = scope
      withUnsafeMutableBytes(of: &storage) { raw in withUnsafeBytes(of: sin6) { raw.copyMemory(from: $0) } }
      length = socklen_t(MemoryLayout<sockaddr_in6>.size)
    } else {
      return nil
    }
    self.storage = storage
  }

  init(storage: sockaddr_storage, length: socklen_t) {
    self.storage = storage
    self.length = length
  }

  package init?(_ endpoint: Endpoint) {
    self.init(host: endpoint.host, port: endpoint.port, interfaceIndex: endpoint.interfaceIndex)
  }

  package var family: Int32 { Int32(storage.ss_family) }

  package var port: UInt16 {
    withUnsafeBytes(of: storage) { raw in
      family == AF_INET
        ? UInt16(bigEndian: raw.load(as: sockaddr_in.self).sin_port)
        : UInt16(bigEndian: raw.load(as: sockaddr_in6.self).sin6_port)
    }
  }

  /// The numeric address without the port.
  package var host: String {
    var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
    withUnsafeBytes(of: storage) { raw in
      if family == AF_INET {
        var address = raw.load(as: sockaddr_in.self).sin_addr
        _ = inet_ntop(AF_INET, &address, &buffer, socklen_t(buffer.count))
      } else {
        var address = raw.load(as: sockaddr_in6.self).sin6_addr
        _ = inet_ntop(AF_INET6, &address, &buffer, socklen_t(buffer.count))
      }
    }
    return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
  }

  /// The address as an endpoint, with the interface of an IPv6 address that has one (a
  /// link-local address is only reachable through it).
  package var endpoint: Endpoint {
    var scope: UInt32 = 0
    if family == AF_INET6 {
      withUnsafeBytes(of: storage) { raw in scope = raw.load(as: sockaddr_in6.self).sin6_scope_id }
    }
    return Endpoint(host: host, port: port, interfaceIndex: scope)
  }

  package var description: String { endpoint.description }

  func withSockaddr<R>(_ body: (UnsafePointer<sockaddr>, socklen_t) throws -> R) rethrows -> R {
    try withUnsafeBytes(of: storage) { raw in
      try body(raw.baseAddress!.assumingMemoryBound(to: sockaddr.self), length)
    }
  }
}
