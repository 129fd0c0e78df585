#if canImport(Glibc)
  import Glibc
#endif

extension SocketAddress {
  /// The source a connection counts against in per-source limits: the IPv4 address
  /// (IPv4-mapped IPv6 addresses too), or the /64 prefix of an IPv6 address, since one host
  /// may use any address of its /64.
  package var sourceKey: String {
    guard family == AF_INET6 else { return host }
    let bytes = withUnsafeBytes(of: storage) { raw in
      withUnsafeBytes(of: raw.load(as: sockaddr_in6.self).sin6_addr) { Array($0) }
    }
    let mapped = bytes[0..<10].allSatisfy { $0 == 0 } && bytes[10] == 0xFF && bytes[11] == 0xFF
    if mapped { return bytes[12..<16].map(String.init).joined(separator: ".") }
    let groups = stride(from: 0, to: 8, by: 2).map { String(UInt16(bytes[$0]) << 8 | UInt16(bytes[$0 + 1]), radix: 16) }
    return groups.joined(separator: ":") + "::/64"
  }
}
