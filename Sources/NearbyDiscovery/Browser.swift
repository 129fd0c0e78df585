import CDNSSD
import NearbyCore
import NearbyTransport

#if canImport(Glibc)
  import Glibc
#endif

/// What a browser reports.
package enum BrowserEvent: Sendable, Hashable {
  case found(DiscoveredPeer)
  case updated(DiscoveredPeer)
  case lost(Peer)
  /// An instance of the service type that is not a Nearby peer (another program's service).
  case notANearbyPeer(instance: String, reason: String)
  /// Browsing failed (typically: the daemon is not running); the browser retries by itself.
  case failed(DNSServiceError)
  /// More instances were announced than the browser resolves and remembers (`limit`: a
  /// flood?): the newest are left out, and looked for again once there is room. Once per
  /// crowding, not per instance.
  case crowded(limit: Int)
}

/// Browses a service type and turns instances into peers.
///
/// For each instance it resolves host, port and TXT with `DNSServiceResolve`, then queries
/// the host's A and AAAA records with `DNSServiceQueryRecord` (Avahi's compatibility layer
/// has no `DNSServiceGetAddrInfo`, and `getaddrinfo` would block). ``PeerDirectory`` merges
/// the instances of one peer id. Everything runs on the event loop thread.
package final class Browser: @unchecked Sendable {
  package let serviceType: ServiceType
  package let loop: EventLoop
  /// How long to wait before browsing again after a failure.
  package var retryInterval: Duration = .seconds(2)
  /// Receives the events, on the loop thread.
  private let sink: @Sendable (BrowserEvent) -> Void

  // Loop thread only.
  private var directory: PeerDirectory
  private var browse: DNSServiceOperation?
  private var instances: [PeerDirectory.InstanceKey: InstanceResolver] = [:]
  /// Which instances are resolved at once (a flood of instances takes a bounded number).
  private var slots: InstanceSlots<PeerDirectory.InstanceKey>
  /// A second browse that asks the daemon for every instance again after a flood left some
  /// out (see ``InstanceSlots/shouldAskAgain``). Only its additions count: the first browse
  /// knew every instance, those left out too, and reports what goes. Ended after
  /// ``askAgainWindow``.
  private var askingAgain: DNSServiceOperation?
  private var askingAgainTimer: UInt64?
  /// Crowding was reported (``BrowserEvent/crowded(limit:)``) and has not ended: it ends when
  /// a second browse's window passes with nothing left out. (Kept when browsing restarts
  /// after a failure: a flood still there is not news.)
  private var crowdedReported = false
  /// How long the second browse runs (the daemon lists what it knows at once).
  package var askAgainWindow: Duration = .seconds(5)
  private var running = false
  private var retryTimer: UInt64?
  private var reportedFailure: Int32?

  /// - Parameters:
  ///   - localPeer: our own id, whose advertisement is not reported unless `includeOwnPeer`.
  ///   - sink: called with every event, on the loop thread, in order.
  ///   - slots: how many instances are resolved at once and how many wait (tests make them
  ///     small).
  package init(
    serviceType: ServiceType, localPeer: PeerID? = nil, includeOwnPeer: Bool = false, loop: EventLoop,
    slots: InstanceSlots<PeerDirectory.InstanceKey> = InstanceSlots(), sink: @escaping @Sendable (BrowserEvent) -> Void
  ) {
    self.serviceType = serviceType
    self.loop = loop
    self.directory = PeerDirectory(localPeer: localPeer, includeOwnPeer: includeOwnPeer)
    self.slots = slots
    self.sink = sink
  }

  /// Starts browsing (idempotent).
  package func start() {
    loop.execute { [self] in
      guard !running else { return }
      running = true
      startBrowsing()
    }
  }

  /// Stops browsing and releases every DNS-SD ref; nothing more reaches the sink.
  package func finish() {
    loop.execute { [self] in
      running = false
      tearDown(reportLost: false)
    }
  }

  private func startBrowsing() {
    _ = silenceAvahiCompatibilityWarning
    guard running, browse == nil else { return }
    switch startBrowse(second: false, onFailure: { [unowned self] error in failed(error) }) {
    case .success(let operation): browse = operation
    case .failure(let error): failed(error)
    }
  }

  /// Asks the daemon for every instance again, with a second browse for a while (see
  /// ``askingAgain``). A failure of it only ends it: the first browse goes on.
  ///
  /// Its removals count too: the two browses are separate connections to the daemon, and
  /// nothing orders one's events against the other's. An addition it listed just before an
  /// instance went can arrive after the first browse's removal, and its own removal, which
  /// follows on the same connection, is what takes that instance out again.
  private func askAgain() {
    stopAskingAgain()
    // When it cannot start, what was left out stays counted: the next instance that goes
    // tries again.
    guard case .success(let operation) = startBrowse(second: true, onFailure: { [unowned self] _ in stopAskingAgain() }) else { return }
    slots.askingAgain()
    askingAgain = operation
    askingAgainTimer = loop.schedule(after: askAgainWindow) { [self] in
      askingAgainTimer = nil
      stopAskingAgain()
      // Nothing left out while it listed everything: the crowding is over. Something left
      // out meanwhile, with room again now (instances went while it ran): ask once more.
      if slots.turnedAway == 0 { crowdedReported = false }
      if slots.shouldAskAgain { askAgain() }
    }
  }

  /// Which browse a callback comes from (the context of its ref).
  private final class BrowseContext {
    let browser: Browser
    let second: Bool
    init(browser: Browser, second: Bool) {
      self.browser = browser
      self.second = second
    }
  }

  /// A `DNSServiceBrowse` of the service type, watched by the loop; its callbacks go to
  /// ``browsed(second:flags:interface:error:name:domain:)``.
  private func startBrowse(second: Bool, onFailure: @escaping (DNSServiceError) -> Void) -> Result<DNSServiceOperation, DNSServiceError> {
    var ref: DNSServiceRef?
    let context = Unmanaged.passRetained(BrowseContext(browser: self, second: second) as AnyObject)
    let result = DNSServiceBrowse(
      &ref, 0, 0, serviceType.type, nil,
      { _, flags, interface, error, name, _, domain, context in
        let target = Unmanaged<AnyObject>.fromOpaque(context!).takeUnretainedValue() as! BrowseContext
        target.browser.browsed(
          second: target.second, flags: flags, interface: interface, error: error, name: name.map { String(cString: $0) } ?? "",
          domain: domain.map { String(cString: $0) } ?? "local.")
      }, context.toOpaque())
    guard result == Int32(kDNSServiceErr_NoError), let ref else {
      context.release()
      return .failure(DNSServiceError(code: result, operation: "DNSServiceBrowse"))
    }
    do {
      // Its init releases what it was given when it throws.
      return .success(try DNSServiceOperation(ref: ref, context: context, loop: loop, onFailure: onFailure))
    } catch {
      return .failure(DNSServiceError(code: Int32(kDNSServiceErr_Unknown), operation: "DNSServiceRefSockFD"))
    }
  }

  private func stopAskingAgain() {
    if let askingAgainTimer { loop.cancelTimer(askingAgainTimer) }
    askingAgainTimer = nil
    askingAgain?.cancel()
    askingAgain = nil
  }

  /// An instance was announced (by either browse): resolved now, or waiting for a slot, or
  /// (past the waiting list) left out, which is reported once per crowding.
  private func announced(_ key: PeerDirectory.InstanceKey) {
    // Not after a failure tore browsing down (later callbacks of the same batch still come).
    guard running, browse != nil, instances[key] == nil else { return }
    if slots.announced(key) {
      startResolving(key)
    } else if slots.turnedAway > 0, !crowdedReported {
      crowdedReported = true
      sink(.crowded(limit: slots.limit + slots.waitingLimit))
    }
  }

  /// An instance went (either browse may say so; a second time changes nothing).
  private func withdrawn(_ key: PeerDirectory.InstanceKey) {
    instances.removeValue(forKey: key)?.cancel()
    publish(directory.removed(key))
    if let next = slots.withdrawn(key) { startResolving(next) }
    if slots.shouldAskAgain, askingAgain == nil { askAgain() }
  }

  private func browsed(second: Bool, flags: DNSServiceFlags, interface: UInt32, error: DNSServiceErrorType, name: String, domain: String) {
    if second {
      // Ended meanwhile (by an earlier callback of the same batch): nothing more counts.
      guard askingAgain != nil else { return }
      guard error == Int32(kDNSServiceErr_NoError) else { return stopAskingAgain() }
    } else {
      guard error == Int32(kDNSServiceErr_NoError) else {
        failed(DNSServiceError(code: error, operation: "DNSServiceBrowse"))
        return
      }
      reportedFailure = nil
    }
    let key = PeerDirectory.InstanceKey(name: name, interfaceIndex: interface, domain: domain)
    if flags & DNSServiceFlags(kDNSServiceFlagsAdd) != 0 {
      announced(key)
    } else {
      withdrawn(key)
    }
  }

  private func startResolving(_ key: PeerDirectory.InstanceKey) {
    let resolver = InstanceResolver(key: key, serviceType: serviceType, loop: loop, browser: self)
    instances[key] = resolver
    resolver.start()
  }

  /// An instance's resolution changed. Loop thread.
  func resolved(_ key: PeerDirectory.InstanceKey, _ outcome: Result<PeerDirectory.Resolution, AdvertisementError>) {
    guard instances[key] != nil else { return }
    switch outcome {
    case .success(let resolution): publish(directory.resolved(key, resolution))
    case .failure(let error): publish(directory.invalid(key, reason: error.description))
    }
  }

  private func publish(_ changes: [PeerDirectory.Change]) {
    for change in changes {
      switch change {
      case .found(let peer): sink(.found(peer))
      case .updated(let peer): sink(.updated(peer))
      case .lost(let peer): sink(.lost(peer))
      case .notANearbyPeer(let instance, let reason): sink(.notANearbyPeer(instance: instance, reason: reason))
      }
    }
  }

  private func tearDown(reportLost: Bool) {
    if let retryTimer { loop.cancelTimer(retryTimer) }
    retryTimer = nil
    browse?.cancel()
    browse = nil
    for (key, resolver) in instances {
      resolver.cancel()
      let changes = directory.removed(key)
      if reportLost { publish(changes) }
    }
    instances.removeAll()
    slots.reset()
    stopAskingAgain()
  }

  /// Reports a failure once and browses again later. While the daemon is away nobody can be
  /// seen, so every peer is reported lost; they are found again when it is back.
  func failed(_ error: DNSServiceError) {
    tearDown(reportLost: true)
    if reportedFailure != error.code {
      reportedFailure = error.code
      sink(.failed(error))
    }
    guard running else { return }
    retryTimer = loop.schedule(after: retryInterval) { [self] in
      retryTimer = nil
      startBrowsing()
    }
  }
}
