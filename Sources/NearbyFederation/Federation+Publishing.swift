import Nearby
import NearbyCore

/// Publishing: frames for peers behind the federation go to the stream, on their subject;
/// failures are tried again (a failover takes a moment) and then reported; unanswered
/// messages expire.
extension Federation {
  /// The longest a publish waits for the stream's answer before it is tried again.
  static let publishWait: Duration = .seconds(5)
  /// How often a publish is tried before the sender hears `storeFailed`.
  static let publishAttempts = 6

  /// A sealed message for `recipient`, exactly as the relay would forward it.
  func publish(_ message: Frame.Message, for recipient: PeerID) {
    let key = FederationLedger<String>.Key(origin: message.sender, id: message.id, recipient: recipient)
    guard connection != nil, pending.count < Self.maximumPending else {
      storeFailed(key, "the federation is \(connection == nil ? "not connected" : "not keeping up")")
      return
    }
    var data: [UInt8] = []
    FrameEncoder.encodeMessage(message, into: &data)
    // The same id for every attempt: the stream keeps one copy.
    let messageID = "\(message.sender.hex).\(message.id).\(recipient.hex)"
    ledger.published(origin: message.sender, id: message.id, recipient: recipient, at: now)
    send(
      "m.\(messageID)", PendingPublish(subject: configuration.subject(for: recipient), data: data, messageID: messageID, attempts: 0, message: key))
  }

  /// A receipt or report for `origin`.
  func publishReport(_ frame: Frame, for origin: PeerID) {
    guard connection != nil, pending.count < Self.maximumPending else { return }
    nextReportKey &+= 1
    send(
      "r.\(nextReportKey)",
      PendingPublish(subject: configuration.subject(for: origin), data: FrameEncoder.encode(frame), messageID: nil, attempts: 0, message: nil))
  }

  private func send(_ key: String, _ publish: PendingPublish) {
    var publish = publish
    publish.attempts += 1
    pending[key] = publish
    do throws(NATSError) {
      try connection?.publishAsync(publish.subject, publish.data, key: key, messageID: publish.messageID, maximumWait: Self.publishWait)
    } catch {
      retryOrFail(key, error)
    }
  }

  /// The stream answered a publish.
  func publishAnswered(_ result: NATSPublishResult) {
    guard pending[result.key] != nil else { return }
    guard let failure = result.failure else {
      pending[result.key] = nil
      statistics.published += 1
      return
    }
    retryOrFail(result.key, failure)
  }

  /// Timeouts, missing leaders and a lost connection pass (a failover, an election): tried
  /// again with backoff. A full stream or a message too large is final.
  private func retryOrFail(_ key: String, _ error: NATSError) {
    guard let publish = pending[key] else { return }
    let final = error.jetStreamCode == 10_054 || error.jetStreamCode == 10_077 || error.detail.contains("maximum")
    if !final, publish.attempts < Self.publishAttempts, !isStopping {
      statistics.publishRetries += 1
      let delay = Duration.milliseconds(250 << min(publish.attempts, 4))
      control.after(delay) {
        self.queue.async {
          guard let again = self.pending[key] else { return }
          self.send(key, again)
        }
      }
      return
    }
    pending[key] = nil
    if let message = publish.message {
      storeFailed(message, "\(error)")
    } else {
      report(.warning("dropped a receipt or report on \(publish.subject): \(error)"))
    }
  }

  private func storeFailed(_ key: FederationLedger<String>.Key, _ why: String) {
    statistics.publishFailures += 1
    ledger.answered(origin: key.origin, ids: [key.id], recipient: key.recipient)
    report(.warning("could not store message \(key.id) from \(key.origin.shortHex) for \(key.recipient.shortHex): \(why)"))
    session.federationInput { machine, actions, _ in
      machine.federationStoreFailed(origin: key.origin, messageID: key.id, recipient: key.recipient, into: &actions)
    }
  }

  /// Messages published here that nobody answered within the age limit.
  func expireOverdue() {
    let due = ledger.expired(at: now)
    guard !due.isEmpty else { return }
    statistics.expired += UInt64(due.count)
    session.federationInput { machine, actions, _ in
      for key in due { machine.federationExpired(origin: key.origin, messageID: key.id, recipient: key.recipient, into: &actions) }
    }
  }
}
