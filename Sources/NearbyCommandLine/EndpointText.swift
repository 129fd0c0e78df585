import Nearby

#if canImport(Glibc)
  import Glibc
#endif

/// `HOST:PORT` or `[IPv6]:PORT` with a numeric host, as `--connect` takes it.
public enum EndpointText {
  /// - Returns: the endpoint (`localhost` means 127.0.0.1), or nil when the text is not
  ///   a numeric address and a port from 1 to 65535.
  public static func parse(_ text: String) -> Endpoint? {
    var host: Substring
    var port: Substring
    if text.hasPrefix("["), let close = text.firstIndex(of: "]") {
      host = text[text.index(after: text.startIndex)..<close]
      let rest = text[text.index(after: close)...]
      guard rest.hasPrefix(":") else { return nil }
      port = rest.dropFirst()
    } else {
      guard let colon = text.lastIndex(of: ":") else { return nil }
      host = text[..<colon]
      port = text[text.index(after: colon)...]
    }
    if host == "localhost" { host = "127.0.0.1" }
    guard let number = UInt16(port), number > 0, isNumeric(String(host)) else { return nil }
    return Endpoint(host: String(host), port: number)
  }

  /// Whether `host` is a numeric IPv4 or IPv6 address (a `%zone` suffix allowed).
  static func isNumeric(_ host: String) -> Bool {
    var v4 = in_addr()
    var v6 = in6_addr()
    let bare = host.split(separator: "%").first.map(String.init) ?? host
    return inet_pton(AF_INET, bare, &v4) == 1 || inet_pton(AF_INET6, bare, &v6) == 1
  }
}
