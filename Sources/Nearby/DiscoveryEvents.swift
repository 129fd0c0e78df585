/// The events of a ``NearbyBrowser`` or ``NearbyAdvertiser``, as an async sequence that
/// several consumers can read: each iteration sees every event published while it runs (the
/// first one also those published before anybody iterated). It ends when `run()` returns.
public struct DiscoveryEvents<Element: Sendable>: AsyncSequence, Sendable {
  public typealias Failure = Never

  let hub: EventHub
  let extract: @Sendable (HubEvent) -> Element?

  public func makeAsyncIterator() -> Iterator { Iterator(subscription: Subscription(hub: hub, extract: extract)) }

  public struct Iterator: AsyncIteratorProtocol, Sendable {
    public typealias Failure = Never
    let subscription: Subscription

    public nonisolated(nonsending) mutating func next() async -> Element? { await subscription.next() }

    public mutating func next(isolation actor: isolated (any Actor)?) async -> Element? { await subscription.next() }
  }

  final class Subscription: Sendable {
    let cursor: EventCursor
    let extract: @Sendable (HubEvent) -> Element?

    init(hub: EventHub, extract: @escaping @Sendable (HubEvent) -> Element?) {
      cursor = EventCursor(hub: hub)
      self.extract = extract
    }

    nonisolated(nonsending) func next() async -> Element? {
      while let event = await cursor.next() {
        if let element = extract(event) { return element }
      }
      return nil
    }
  }
}
