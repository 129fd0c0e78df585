import CDNSSD
import NearbyCore
import NearbyTransport
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// What an advertiser reports.
package enum AdvertiserEvent: Sendable, Hashable {
  /// The service is registered under `name` (the daemon may have renamed it on a conflict).
  case registered(name: String)
  /// Registration failed or the daemon went away; the advertiser retries by itself.
  case failed(DNSServiceError)
  /// The TXT record was updated in place.
  case infoUpdated
}

/// Advertises a peer: registers `<display name>.<service type>` on the listener's port with
/// the TXT record of PROTOCOL.md section 1.3, through `DNSServiceRegister`.
///
/// All DNS-SD calls run on the event loop thread. When the daemon is missing or dies, the
/// advertiser reports it once and registers again by itself when the daemon is back.
package final class Advertiser: @unchecked Sendable {
  package let serviceType: ServiceType
  package let port: UInt16
  package let loop: EventLoop
  /// How long to wait before registering again after a failure.
  package var retryInterval: Duration = .seconds(2)
  /// Receives the events, on the loop thread.
  private let sink: @Sendable (AdvertiserEvent) -> Void

  /// Peer, version and relay flag never change; only the info does.
  private let baseAdvertisement: PeerAdvertisement

  // Loop thread only.
  private var advertisement: PeerAdvertisement
  private var operation: DNSServiceOperation?
  private var retryTimer: UInt64?
  private var running = false
  private var reportedFailure: Int32?
  /// 1 for the display name itself; n > 1 for "name #n" after a local name conflict.
  private var nameAttempt = 1
  private let registeredName = Mutex<String?>(nil)

  /// - Throws: ``DiscoveryInfoError`` when the TXT record would break the limits.
  /// - Parameter sink: called with every event, on the loop thread, in order.
  package init(
    advertisement: PeerAdvertisement, serviceType: ServiceType, port: UInt16, loop: EventLoop,
    sink: @escaping @Sendable (AdvertiserEvent) -> Void
  ) throws(DiscoveryInfoError) {
    _ = try advertisement.txtRecord()
    self.advertisement = advertisement
    self.baseAdvertisement = advertisement
    self.serviceType = serviceType
    self.port = port
    self.loop = loop
    self.sink = sink
  }

  /// The name the daemon registered, once known.
  package var name: String? { registeredName.withLock { $0 } }

  /// Starts advertising (idempotent).
  package func start() {
    loop.execute { [self] in
      guard !running else { return }
      running = true
      register()
    }
  }

  /// Withdraws the advertisement (idempotent); ``start()`` may be called again.
  package func stop() {
    loop.execute { [self] in
      running = false
      nameAttempt = 1
      withdraw()
    }
  }

  /// Stops for good; nothing more reaches the sink.
  package func finish() {
    loop.execute { [self] in
      running = false
      withdraw()
    }
  }

  /// Publishes new discovery info; peers that resolve the instance see it (an update).
  /// - Throws: ``DiscoveryInfoError`` when the record would be too large.
  package func update(info: DiscoveryInfo) throws(DiscoveryInfoError) {
    var changed = baseAdvertisement
    changed.info = info
    let record = try changed.txtRecord()
    let updated = changed
    loop.execute { [self] in
      advertisement = updated
      guard let ref = operation?.serviceRef else { return }
      let result = record.withUnsafeBytes { raw in
        DNSServiceUpdateRecord(ref, nil, 0, UInt16(raw.count), raw.baseAddress, 0)
      }
      if result == Int32(kDNSServiceErr_NoError) {
        sink(.infoUpdated)
      } else {
        // Fall back to registering again with the new record.
        withdraw()
        register()
      }
    }
  }

  private func withdraw() {
    if let retryTimer { loop.cancelTimer(retryTimer) }
    retryTimer = nil
    operation?.cancel()
    operation = nil
    registeredName.withLock { $0 = nil }
  }

  private func register() {
    _ = silenceAvahiCompatibilityWarning
    guard running, operation == nil else { return }
    let record = (try? advertisement.txtRecord()) ?? []
    var ref: DNSServiceRef?
    let context = Unmanaged.passRetained(self as AnyObject)
    let instanceName = Self.instanceName(advertisement.peer.name.value, attempt: nameAttempt)
    let result = record.withUnsafeBytes { raw in
      DNSServiceRegister(
        &ref, 0, 0, instanceName, serviceType.type, nil, nil, port.bigEndian, UInt16(raw.count), raw.baseAddress,
        { _, _, error, name, _, _, context in
          let advertiser = Unmanaged<AnyObject>.fromOpaque(context!).takeUnretainedValue() as! Advertiser
          advertiser.registerCallback(error: error, name: name.map { String(cString: $0) })
        }, context.toOpaque())
    }
    guard result == Int32(kDNSServiceErr_NoError), let ref else {
      context.release()
      if result == Int32(kDNSServiceErr_NameConflict), renameAfterConflict() { return }
      failed(DNSServiceError(code: result, operation: "DNSServiceRegister"))
      return
    }
    do {
      operation = try DNSServiceOperation(ref: ref, context: context, loop: loop) { [unowned self] error in
        failed(error)
      }
    } catch {
      failed(DNSServiceError(code: Int32(kDNSServiceErr_Unknown), operation: "DNSServiceRefSockFD"))
    }
  }

  private func registerCallback(error: DNSServiceErrorType, name: String?) {
    if error == Int32(kDNSServiceErr_NoError) {
      reportedFailure = nil
      registeredName.withLock { $0 = name }
      sink(.registered(name: name ?? advertisement.peer.name.value))
    } else if error == Int32(kDNSServiceErr_NameConflict) {
      withdraw()
      if !renameAfterConflict() { failed(DNSServiceError(code: error, operation: "DNSServiceRegister")) }
    } else {
      failed(DNSServiceError(code: error, operation: "DNSServiceRegister"))
    }
  }

  /// Another service on this host has our name (the daemon renames only conflicts with
  /// other hosts): try "name #2", "name #3", ... like avahi_alternative_service_name.
  /// - Returns: whether another attempt was started.
  private func renameAfterConflict() -> Bool {
    guard nameAttempt < 100 else { return false }
    nameAttempt += 1
    register()
    return true
  }

  /// `name`, or `name #n` shortened to fit the 63-byte limit of an instance name.
  static func instanceName(_ name: String, attempt: Int) -> String {
    guard attempt > 1 else { return name }
    let suffix = " #\(attempt)"
    var base = Substring(name)
    while base.utf8.count + suffix.utf8.count > DisplayName.maximumByteCount { base = base.dropLast() }
    return base + suffix
  }

  /// Reports a failure once (until a registration succeeds again) and retries.
  private func failed(_ error: DNSServiceError) {
    withdraw()
    if reportedFailure != error.code {
      reportedFailure = error.code
      sink(.failed(error))
    }
    guard running else { return }
    retryTimer = loop.schedule(after: retryInterval) { [self] in
      retryTimer = nil
      register()
    }
  }
}
