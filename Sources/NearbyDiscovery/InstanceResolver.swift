import CDNSSD
import NearbyCore
import NearbyTransport

#if canImport(Glibc)
  import Glibc
#endif

/// Resolves one instance and keeps its addresses current. Loop thread only (hence unchecked).
final class InstanceResolver: @unchecked Sendable {
  let key: PeerDirectory.InstanceKey
  let serviceType: ServiceType
  let loop: EventLoop
  unowned let browser: Browser
  private var resolve: DNSServiceOperation?
  private var queries: [DNSServiceOperation] = []
  private var hostName: String?
  private var port: UInt16 = 0
  private var advertisement: Result<PeerAdvertisement, AdvertisementError>?
  private var addresses: [String] = []
  private var retryTimer: UInt64?
  private var cancelled = false
  /// How long after a failed resolution it is tried again.
  static let retryInterval: Duration = .seconds(1)

  init(key: PeerDirectory.InstanceKey, serviceType: ServiceType, loop: EventLoop, browser: Browser) {
    self.key = key
    self.serviceType = serviceType
    self.loop = loop
    self.browser = browser
  }

  func start() {
    var ref: DNSServiceRef?
    let context = Unmanaged.passRetained(self as AnyObject)
    let result = DNSServiceResolve(
      &ref, 0, key.interfaceIndex, key.name, serviceType.type, key.domain,
      { _, _, _, error, _, host, port, length, txt, context in
        let resolver = Unmanaged<AnyObject>.fromOpaque(context!).takeUnretainedValue() as! InstanceResolver
        let record = txt.map { Array(UnsafeBufferPointer(start: $0, count: Int(length))) } ?? []
        resolver.resolveCallback(error: error, host: host.map { String(cString: $0) }, port: UInt16(bigEndian: port), txt: record)
      }, context.toOpaque())
    guard result == Int32(kDNSServiceErr_NoError), let ref else {
      context.release()
      browser.failed(DNSServiceError(code: result, operation: "DNSServiceResolve"))
      return
    }
    do {
      resolve = try DNSServiceOperation(ref: ref, context: context, loop: loop) { [unowned self] error in
        browser.failed(error)
      }
    } catch {
      browser.failed(DNSServiceError(code: Int32(kDNSServiceErr_Unknown), operation: "DNSServiceRefSockFD"))
    }
  }

  func cancel() {
    cancelled = true
    if let retryTimer { loop.cancelTimer(retryTimer) }
    retryTimer = nil
    resolve?.cancel()
    resolve = nil
    for query in queries { query.cancel() }
    queries = []
  }

  private func resolveAgainLater() {
    resolve?.cancel()
    resolve = nil
    guard !cancelled, retryTimer == nil else { return }
    retryTimer = loop.schedule(after: Self.retryInterval) { [self] in
      retryTimer = nil
      if !cancelled { start() }
    }
  }

  private func resolveCallback(error: DNSServiceErrorType, host: String?, port: UInt16, txt: [UInt8]) {
    guard error == Int32(kDNSServiceErr_NoError) else {
      // The resolution failed, not the record (the instance is not "not a Nearby peer"):
      // it timed out on a busy network, or the daemon went away (then the browse fails
      // too, and browsing starts again). What was resolved before stays; try again soon.
      resolveAgainLater()
      return
    }
    guard let host else {
      browser.resolved(key, .failure(.malformedRecord))
      return
    }
    advertisement = PeerAdvertisement.parse(txt: txt)
    self.port = port
    if host != hostName {
      hostName = host
      addresses = []
      for query in queries { query.cancel() }
      queries = []
      for type in [kDNSServiceType_A, kDNSServiceType_AAAA] { query(host, type: UInt16(type)) }
    }
    report()
  }

  private func query(_ host: String, type: UInt16) {
    var ref: DNSServiceRef?
    let context = Unmanaged.passRetained(self as AnyObject)
    let result = DNSServiceQueryRecord(
      &ref, 0, key.interfaceIndex, host, type, UInt16(kDNSServiceClass_IN),
      { _, flags, _, error, _, type, _, length, data, _, context in
        let resolver = Unmanaged<AnyObject>.fromOpaque(context!).takeUnretainedValue() as! InstanceResolver
        guard error == Int32(kDNSServiceErr_NoError), let data else { return }
        let bytes = UnsafeRawBufferPointer(start: data, count: Int(length))
        resolver.addressCallback(added: flags & DNSServiceFlags(kDNSServiceFlagsAdd) != 0, type: type, rdata: bytes)
      }, context.toOpaque())
    guard result == Int32(kDNSServiceErr_NoError), let ref else {
      context.release()
      return
    }
    if let operation = try? DNSServiceOperation(ref: ref, context: context, loop: loop, onFailure: { [unowned self] error in browser.failed(error) })
    {
      queries.append(operation)
    }
  }

  private func addressCallback(added: Bool, type: UInt16, rdata: UnsafeRawBufferPointer) {
    var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
    let family: Int32
    switch (type, rdata.count) {
    case (UInt16(kDNSServiceType_A), 4): family = AF_INET
    case (UInt16(kDNSServiceType_AAAA), 16): family = AF_INET6
    default: return
    }
    guard inet_ntop(family, rdata.baseAddress, &text, socklen_t(text.count)) != nil else { return }
    let address = String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    if added {
      guard !addresses.contains(address) else { return }
      addresses.append(address)
    } else {
      addresses.removeAll { $0 == address }
    }
    report()
  }

  private func report() {
    guard let advertisement, let hostName else { return }
    switch advertisement {
    case .success(let parsed):
      browser.resolved(key, .success(PeerDirectory.Resolution(advertisement: parsed, hostName: hostName, port: port, addresses: addresses)))
    case .failure(let error):
      browser.resolved(key, .failure(error))
    }
  }
}
