import Nearby
import NearbyCore

/// Deliveries: each peer connected here gets its subject's consumer, bound to this relay;
/// what it delivers goes to the session, and is acknowledged once the peer's receipt passes.
extension Federation {
  /// (Re)creates the consumer of a peer connected here, delivering to this relay: the old one
  /// (bound to wherever the peer was before, or to us before a failover) goes, and the new
  /// one delivers everything not acknowledged yet, in order. Tried again while it fails.
  func bind(_ id: PeerID) {
    guard local[id] != nil, let connection, !isStopping, statistics.isConnected else { return }
    // One at a time per peer; a bind asked for meanwhile runs after it.
    guard !binding.contains(id) else {
      rebind.insert(id)
      return
    }
    let deliverSubject = configuration.deliverSubject(relay: relay, peer: id)
    if local[id]?.subscription == nil {
      do throws(NATSError) {
        local[id]?.subscription = try connection.subscribe(deliverSubject) { [weak self] message in
          guard let self else { return }
          self.queue.async { self.delivered(message, to: id) }
        }
      } catch {
        report(.warning("could not subscribe to \(deliverSubject): \(error); trying again"))
        control.after(.seconds(1)) { self.queue.async { self.bind(id) } }
        return
      }
    }
    local[id]?.isBound = false
    binding.insert(id)
    var consumer = PushConsumerSettings(
      stream: configuration.stream, name: configuration.consumer(for: id), filterSubject: configuration.subject(for: id),
      deliverSubject: deliverSubject)
    consumer.acknowledgementWait = configuration.acknowledgementWait
    let settings = consumer
    control.async {
      do throws(NATSError) {
        try connection.deleteConsumer(stream: settings.stream, name: settings.name)
        try connection.addPushConsumer(settings)
        self.queue.async {
          self.binding.remove(id)
          if self.local[id] != nil { self.local[id]?.isBound = true }
          if self.rebind.remove(id) != nil { self.bind(id) }
        }
      } catch {
        self.report(.warning("could not create the consumer \(settings.name): \(error); trying again"))
        self.control.after(.seconds(1)) {
          self.queue.async {
            self.binding.remove(id)
            self.rebind.remove(id)
            self.bind(id)
          }
        }
      }
    }
  }

  /// Something the stream delivered for peer `id`.
  func delivered(_ message: NATSMessage, to id: PeerID) {
    guard local[id] != nil, !isStopping, let token = message.reply, let delivery = message.delivery else { return }
    let decoder = FrameDecoder()
    decoder.append(message.data)
    guard let frame = try? decoder.next() else {
      statistics.rejected += 1
      report(.warning("dropped a stored frame for \(id.shortHex) that does not decode"))
      acknowledge(token)
      return
    }
    let expired = Self.wallClock - delivery.timestamp > configuration.queueMaximumAge.nanoseconds
    switch frame {
    case .message(let stored):
      if expired {
        acknowledge(token)
        statistics.expired += 1
        session.federationInput { machine, actions, _ in
          machine.federationExpired(origin: stored.sender, messageID: stored.id, recipient: id, into: &actions)
        }
        return
      }
      guard ledger.delivering(token, origin: stored.sender, id: stored.id, recipient: id) else {
        statistics.copiesSkipped += 1
        return
      }
      session.federationInput(
        { machine, actions, _ in machine.federationReceived(frame, for: id, into: &actions) },
        then: { [weak self] result in
          guard let self else { return }
          self.queue.async { self.handedOver(result, stored, to: id, token: token, delivery: delivery) }
        })
    case .delivered(let receipt):
      ledger.answered(origin: receipt.origin, ids: receipt.ids, recipient: receipt.recipient)
      passOn(frame, to: id, token: token, expired: expired)
    case .undeliverable(let report):
      if report.reason != .queued { ledger.answered(origin: report.origin, ids: [report.messageID], recipient: report.recipient) }
      passOn(frame, to: id, token: token, expired: expired)
    default:
      statistics.rejected += 1
      acknowledge(token)
    }
  }

  /// A receipt or report for peer `id`: acknowledged once handed over (or when it is too old
  /// to matter).
  private func passOn(_ frame: Frame, to id: PeerID, token: String, expired: Bool) {
    guard !expired else {
      acknowledge(token)
      return
    }
    session.federationInput(
      { machine, actions, _ in machine.federationReceived(frame, for: id, into: &actions) },
      then: { [weak self] result in
        guard let self else { return }
        self.queue.async {
          switch result {
          case .handedOn, .rejected: self.acknowledge(token)
          case .notHere, .unknownOrigin: break
          }
        }
      })
  }

  /// The delay of a delivery again while the origin of a message is unknown.
  static let unknownOriginRetry = Duration.seconds(2)

  private func handedOver(_ result: FederationDelivery, _ message: Frame.Message, to id: PeerID, token: String, delivery: JetStreamDelivery) {
    switch result {
    case .handedOn:
      statistics.delivered += 1
    case .notHere:
      ledger.notDelivered(origin: message.sender, id: message.id, recipient: id)
    case .unknownOrigin:
      ledger.notDelivered(origin: message.sender, id: message.id, recipient: id)
      // Stored that long ago, and delivered before: no presence came for its origin meanwhile.
      // (By the stored time, not the count of deliveries: the consumer is made anew whenever
      // the peer arrives and after a reconnection, which counts from 1 again. A relay binds
      // its consumers only once the presence has loaded, so an old message that comes right
      // after a restart waits one more delivery.)
      let age = Duration.nanoseconds(max(0, Self.wallClock - delivery.timestamp))
      if delivery.deliveries >= 2, age >= configuration.unknownOriginGiveUp {
        statistics.rejected += 1
        report(
          .warning(
            "dropped a stored message for \(id.shortHex) from \(message.sender.shortHex): no presence names its origin after \(configuration.unknownOriginGiveUp.formattedSeconds)"
          ))
        acknowledge(token)
        return
      }
      // Its origin's presence has not arrived yet: the stream delivers it again in a moment.
      let delay = Self.unknownOriginRetry.components.seconds * 1_000_000_000
      try? connection?.publish(token, Array(#"-NAK {"delay": \#(delay)}"#.utf8))
    case .rejected(let why):
      ledger.notDelivered(origin: message.sender, id: message.id, recipient: id)
      statistics.rejected += 1
      report(.warning("dropped a stored message from \(message.sender.shortHex) for \(id.shortHex): \(why)"))
      acknowledge(token)
    }
  }

  /// Acknowledges a delivery (it leaves the work queue). A token of a consumer that was
  /// recreated since does nothing: the new consumer delivers the message again.
  func acknowledge(_ token: String) {
    do throws(NATSError) {
      try connection?.publish(token, Array("+ACK".utf8))
      statistics.acknowledged += 1
    } catch {
      report(.warning("could not acknowledge a delivery: \(error)"))
    }
  }
}
