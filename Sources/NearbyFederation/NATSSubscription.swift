import CNats
import Synchronization

/// A subscription of a ``NATSConnection`` (libnats's `natsSubscription`): its handler gets
/// each message on a thread of libnats's delivery pool, in order.
public final class NATSSubscription: @unchecked Sendable {
  // Invariant for @unchecked Sendable: the pointer never changes; libnats's subscription
  // calls are safe from any thread.
  private let subscription: OpaquePointer
  public let subject: String
  private let isUnsubscribed = Atomic<Bool>(false)

  init(connection: NATSConnection, subject: String, handler: @escaping @Sendable (NATSMessage) -> Void) throws(NATSError) {
    // libnats holds the box through an unretained pointer until the subscription's
    // "complete" callback (no message callback follows it), which gives the box up.
    let box = Unmanaged.passRetained(SubscriptionBox(handler)).toOpaque()
    var subscription: OpaquePointer?
    let status = natsConnection_Subscribe(&subscription, connection.connection, subject, messageArrived, box)
    guard status == NATS_OK, let subscription else {
      let error = NATSError("natsConnection_Subscribe(\(subject))", status)
      Unmanaged<SubscriptionBox>.fromOpaque(box).release()
      throw error
    }
    // Should this fail, the box lives on: a small leak rather than a use after free.
    _ = natsSubscription_SetOnCompleteCB(subscription, subscriptionComplete, box)
    self.subscription = subscription
    self.subject = subject
  }

  /// Stops the subscription (`natsSubscription_Unsubscribe`); no message is handed to the
  /// handler after the messages already being handed out. Idempotent.
  public func unsubscribe() {
    guard !isUnsubscribed.exchange(true, ordering: .acquiringAndReleasing) else { return }
    _ = natsSubscription_Unsubscribe(subscription)
  }

  deinit {
    unsubscribe()
    natsSubscription_Destroy(subscription)
  }
}

private final class SubscriptionBox: Sendable {
  let handler: @Sendable (NATSMessage) -> Void
  init(_ handler: @escaping @Sendable (NATSMessage) -> Void) { self.handler = handler }
}

private let messageArrived: natsMsgHandler = { _, _, message, closure in
  guard let message else { return }
  let copied = NATSMessage(copying: message)
  natsMsg_Destroy(message)
  Unmanaged<SubscriptionBox>.fromOpaque(closure!).takeUnretainedValue().handler(copied)
}

private let subscriptionComplete: natsOnCompleteCB = { closure in
  Unmanaged<SubscriptionBox>.fromOpaque(closure!).release()
}
