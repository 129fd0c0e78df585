import Nearby
import NearbyCore

/// Presence: the entries of the bucket, what the session is told of them, and the entries of
/// the peers connected here.
extension Federation {
  /// Watches every entry (on the watch's own thread; each change is posted to the queue).
  func startWatching(_ bucket: NATSKeyValue) {
    do throws(NATSError) {
      watch = try bucket.watchAll { [weak self] change in
        guard let self else { return }
        self.queue.async { self.presenceChanged(change) }
      }
    } catch {
      report(.setupFailed("\(error)"))
      self.bucket = nil
      control.after(.seconds(2)) { self.queue.async { self.setUp() } }
    }
  }

  private func presenceChanged(_ change: NATSKeyValueChange) {
    guard !isStopping else { return }
    switch change {
    case .put(let key, let value, let created, let revision):
      guard let id = PresenceRecord.peerID(key: key) else { return }
      guard presence[id] != nil || presence.count < Self.maximumPresence else {
        presenceRefused += 1
        if presenceRefused == 1 {
          report(
            .warning(
              "presence names more than \(Self.maximumPresence) peers: the others are ignored (is a site writing entries for peers that do not exist? see the bucket nearby-presence)"
            ))
        }
        return
      }
      guard let record = PresenceRecord(value), record.peer.id == id else {
        report(.warning("ignored the presence entry \(key): it is not a valid presence record"))
        return
      }
      // How long ago it was written: the server's timestamp for what was there before we
      // watched (clocks of relays and servers differ a little), now for what changes.
      let (elapsed, overflow) = Self.wallClock.subtractingReportingOverflow(created)
      let age = Duration.nanoseconds(overflow ? (created < 0 ? .max : 0) : max(0, elapsed))
      let refreshed = isReady ? now : now - age
      if record.relay == relay, local[id] != nil { local[id]?.revision = revision }
      presence[id] = PresenceState(record: record, revision: revision, refreshed: refreshed, announced: presence[id]?.announced)
      announce(id)
    case .deleted(let key):
      guard let id = PresenceRecord.peerID(key: key), presence.removeValue(forKey: id) != nil else { return }
      presenceWarned.remove(id)
      session.federationInput { machine, actions, now in machine.federationPeerRemoved(id, now: now, into: &actions) }
    case .initialValuesDone:
      guard !isReady else { return }
      isReady = true
      // Peers that arrived before the federation was ready: announce and deliver now.
      for id in local.keys.sorted() {
        writePresence(id)
        bind(id)
      }
    case .stopped:
      break
    }
  }

  /// Where presence says the peer is now: online at its site while its entry is fresh.
  func currentSite(_ state: PresenceState) -> PeerSite {
    let fresh = now - state.refreshed < configuration.presenceTTL
    return PeerSite(name: state.record.site, isOnline: state.record.isOnline && fresh)
  }

  /// Tells the session where a peer is, when that changed.
  func announce(_ id: PeerID) {
    guard var state = presence[id] else { return }
    let site = currentSite(state)
    guard state.announced != site else { return }
    state.announced = site
    presence[id] = state
    let record = state.record
    report(.remotePeer(record.peer, site))
    session.federationInput(
      { machine, actions, now in machine.federationPeerUpdated(record.peer, publicKey: record.publicKey, site: site, now: now, into: &actions) },
      then: { [weak self] answer in
        guard let self, answer != .taken, record.peer.id != self.relay else { return }
        // (On the session's thread: the federation's state is its queue's.)
        self.queue.async {
          // Refused for want of room: not announced after all, so the next refresh (each
          // second) tries again. Refused for good: not again until the entry changes.
          if answer == .full, self.presence[id]?.announced == site { self.presence[id]?.announced = nil }
          guard self.presenceWarned.insert(id).inserted else { return }  // once per peer
          self.report(
            .warning(
              answer == .full
                ? "left out the presence of \(record.peer.id.hex): this relay knows as many peers as it may (\(RosterLimits().peers)), or presence gave half of them"
                : "refused the presence of \(record.peer.id.hex): its key does not own its id, or it is a relay"))
        }
      })
  }

  /// Writes a local peer's entry (online, here): one write at a time per peer, none while
  /// disconnected (reconnecting writes them all again).
  func writePresence(_ id: PeerID) {
    guard let peer = local[id], let bucket, !isStopping, statistics.isConnected else { return }
    guard !presenceWrites.contains(id) else { return }
    presenceWrites.insert(id)
    let record = PresenceRecord(peer: peer.peer, publicKey: peer.publicKey, site: configuration.site, relay: relay, isOnline: true)
    control.async {
      do throws(NATSError) {
        let revision = try bucket.put(PresenceRecord.key(id), record.encoded)
        self.queue.async {
          self.presenceWrites.remove(id)
          self.presenceFailures[id] = nil
          if self.local[id] != nil { self.local[id]?.revision = revision }
        }
      } catch {
        // Just after the bucket was made, or a failover, its leader may not be elected yet:
        // soon again (said once per run of failures).
        self.queue.async {
          self.presenceFailures[id, default: 0] += 1
          if self.presenceFailures[id] == 1 {
            self.report(.warning("could not write the presence of \(peer.peer.name) (\(id.shortHex)): \(error); trying again every 0.5 s"))
          }
        }
        self.control.after(.milliseconds(500)) {
          self.queue.async {
            self.presenceWrites.remove(id)
            self.writePresence(id)
          }
        }
      }
    }
  }

  /// Marks a peer that left offline: only if its entry is still the one we wrote (it may be
  /// connected at another relay already). Runs on the request queue.
  func writeOffline(_ peer: Peer, publicKey: [UInt8], revision: UInt64?, bucket: NATSKeyValue) {
    let record = PresenceRecord(peer: peer, publicKey: publicKey, site: configuration.site, relay: relay, isOnline: false)
    do throws(NATSError) {
      if let revision {
        _ = try bucket.update(PresenceRecord.key(peer.id), record.encoded, revision: revision)
      } else {
        try bucket.put(PresenceRecord.key(peer.id), record.encoded)
      }
    } catch {
      report(.warning("could not mark \(peer.name) (\(peer.id.shortHex)) offline: \(error)"))
    }
  }

  /// Every third of the TTL: our peers' entries again; every second: entries that went
  /// stale (their relay stopped refreshing them: its site is gone) turn offline, and entries
  /// older than the age limit are forgotten.
  func refreshPresence() {
    guard isReady else { return }
    let interval = max(configuration.presenceTTL / 3, .seconds(1))
    let seconds = Int(now.components.seconds)
    if seconds % max(1, Int(interval.components.seconds)) == 0 {
      for id in local.keys.sorted() { writePresence(id) }
    }
    for id in presence.keys.sorted() {
      guard let state = presence[id] else { continue }
      if now - state.refreshed > configuration.queueMaximumAge {
        presence[id] = nil
        presenceWarned.remove(id)
        session.federationInput { machine, actions, now in machine.federationPeerRemoved(id, now: now, into: &actions) }
      } else {
        announce(id)
      }
    }
  }
}
