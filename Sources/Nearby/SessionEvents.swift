import NearbyCore
import NearbyTransport

/// Everything a ``NearbySession`` reports, in order, as an async sequence that several
/// consumers can read.
///
/// Each iteration (each `for await` loop) is a subscriber of its own and sees every event
/// published while it runs; the first subscriber also gets the events published before
/// anybody subscribed, so a consumer started right after ``NearbySession/run()`` misses
/// nothing. The sequence ends when the session has stopped.
///
/// A received message counts as delivered — its sender gets `SessionEvent.delivered(messageID:to:)` —
/// once every subscriber has taken it from the sequence. A consumer that falls behind slows
/// the peers that send to it (the session stops reading their connections) instead of
/// making the process grow; one that stops iterating without ending its loop holds them up,
/// so end the loop (or let the iterator go) when you are done.
///
/// For the lowest latency, consume events on the session's I/O thread:
/// `withTaskExecutorPreference(session.executor) { for await event in session.events { ... } }`.
/// The loop body then runs without a thread switch per event; keep it short and non-blocking.
public struct SessionEvents: AsyncSequence, Sendable {
  public typealias Element = SessionEvent
  public typealias Failure = Never

  let hub: EventHub
  /// The session's I/O thread (see ``EventCursor/next()``).
  var loop: EventLoop? = nil

  public func makeAsyncIterator() -> Iterator { Iterator(subscription: Subscription(hub: hub, loop: loop)) }

  /// A subscriber's place in the sequence. It may be handed to another task (created before
  /// a task starts, so that nothing published meanwhile is missed).
  public struct Iterator: AsyncIteratorProtocol, Sendable {
    public typealias Element = SessionEvent
    public typealias Failure = Never
    let subscription: Subscription

    public nonisolated(nonsending) mutating func next() async -> SessionEvent? { await subscription.next() }

    public mutating func next(isolation actor: isolated (any Actor)?) async -> SessionEvent? { await subscription.next() }
  }

  /// One consumer's place in the hub; gone with its iterator.
  final class Subscription: Sendable {
    let cursor: EventCursor

    init(hub: EventHub, loop: EventLoop?) { cursor = EventCursor(hub: hub, loop: loop) }

    // Inlined, with the cursor's `next()`, into the iterator's: each async call between them
    // was a frame of its own from the task's allocator, per event.
    @inline(__always)
    nonisolated(nonsending) func next() async -> SessionEvent? {
      while let event = await cursor.next() {
        if case .session(let event) = event { return event }
      }
      return nil
    }
  }
}

/// A received message that the session acknowledges once every subscriber has taken it,
/// with its size for the connection's inbound budget.
struct MessageClaim: Sendable {
  let taken: TakenMessage
  let bytes: Int
}
