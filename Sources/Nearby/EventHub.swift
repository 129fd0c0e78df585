import NearbyCore
import Synchronization

/// Hands every event to every subscriber, each through a buffer of its own, so that several
/// consumers can read one sequence and none of them steals events from another.
///
/// Events published while nobody is subscribed wait for the first subscriber (so one that
/// subscribes right after starting the session misses nothing). An event may carry a
/// *claim*: once every subscriber that was handed it has taken it (or gone away), its claim
/// is passed to ``onClaimsSettled``, which the session uses to acknowledge a message only
/// when the application has it. Resuming a waiting subscriber happens after the lock is
/// released, exactly once.
///
/// The hub is not generic on purpose: unspecialized generic code looks up type metadata at
/// every call, and this is the path of every event. ``HubEvent`` carries the events of
/// sessions, browsers and advertisers.
final class EventHub: Sendable {
  typealias Element = HubEvent
  typealias Claim = MessageClaim

  /// An event in a subscriber's buffer, with its claim: owned when only this subscriber
  /// was handed the event, shared (counted) when several were.
  struct Item: Sendable {
    let element: Element
    let claim: Claim?
    let shared: ClaimCount?

    init(_ element: Element, claim: Claim? = nil, shared: ClaimCount? = nil) {
      self.element = element
      self.claim = claim
      self.shared = shared
    }
  }

  /// How many subscribers still have to take an event before its claim is settled. Only
  /// touched under the hub's lock.
  final class ClaimCount: @unchecked Sendable {
    let claim: Claim
    var remaining: Int
    init(_ claim: Claim, remaining: Int) {
      self.claim = claim
      self.remaining = remaining
    }
  }

  struct Subscriber {
    var buffer = ItemQueue()
    var waiter: UnsafeContinuation<Element?, Never>?
  }

  struct State {
    var subscribers: [UInt64: Subscriber] = [:]
    var nextSubscriber: UInt64 = 1
    /// Events published before anyone subscribed, for the first subscriber.
    var unclaimed: ItemQueue? = ItemQueue()
    var finished = false
    /// Claims whose events every subscriber has taken, not yet handed to the owner.
    var settled: [Claim] = []
  }

  private let state = Mutex(State())
  /// Called (from the thread that settled them) when claims become settled and none were
  /// waiting before; the owner then collects them with ``takeSettledClaims()``.
  private let onClaimsSettled: @Sendable () -> Void

  init(onClaimsSettled: @escaping @Sendable () -> Void = {}) {
    self.onClaimsSettled = onClaimsSettled
  }

  // MARK: Producing

  /// Publishes events in order. Each claim belongs to the event at the same index (`nil`: none).
  func publish(_ elements: some Sequence<(Element, Claim?)>) {
    var resumes: [(UnsafeContinuation<Element?, Never>, Element)] = []
    var notify = false
    state.withLock { state in
      guard !state.finished else { return }
      for (element, claim) in elements {
        if state.subscribers.isEmpty {
          state.unclaimed?.append(Item(element, claim: claim))
          continue
        }
        let shared = state.subscribers.count > 1 ? claim.map { ClaimCount($0, remaining: state.subscribers.count) } : nil
        // Walk by index, not over `indices`: a dictionary's `indices` holds a copy of the
        // dictionary, so every change below would copy it and every subscriber's buffer
        // (quadratic in the depth of a lagging subscriber's buffer).
        var index = state.subscribers.startIndex
        while index != state.subscribers.endIndex {
          if let waiter = state.subscribers.values[index].waiter {
            state.subscribers.values[index].waiter = nil
            resumes.append((waiter, element))
            notify = Self.take(Item(element, claim: claim, shared: shared), &state) || notify
          } else {
            state.subscribers.values[index].buffer.append(Item(element, claim: claim, shared: shared))
          }
          state.subscribers.formIndex(after: &index)
        }
      }
    }
    for (waiter, element) in resumes { waiter.resume(returning: element) }
    if notify { onClaimsSettled() }
  }

  func publish(_ element: Element, claim: Claim? = nil) {
    publish(CollectionOfOne((element, claim)))
  }

  /// Ends the sequence: subscribers get what is buffered, then `nil`.
  func finish() {
    let waiters = state.withLock { state -> [UnsafeContinuation<Element?, Never>] in
      state.finished = true
      var waiters: [UnsafeContinuation<Element?, Never>] = []
      var index = state.subscribers.startIndex
      while index != state.subscribers.endIndex {
        if let waiter = state.subscribers.values[index].waiter { waiters.append(waiter) }
        state.subscribers.values[index].waiter = nil
        state.subscribers.formIndex(after: &index)
      }
      return waiters
    }
    for waiter in waiters { waiter.resume(returning: nil) }
  }

  /// The claims settled since the last call.
  func takeSettledClaims() -> [Claim] {
    state.withLock { state in
      defer { state.settled.removeAll(keepingCapacity: true) }
      return state.settled
    }
  }

  /// How many events wait in the fullest subscriber's buffer (diagnostics and tests).
  var deepestBuffer: Int {
    state.withLock { state in
      max(state.unclaimed?.count ?? 0, state.subscribers.values.map(\.buffer.count).max() ?? 0)
    }
  }

  // MARK: Consuming

  /// A new subscriber: it sees every event published from now on (the first one also gets
  /// those published before anybody subscribed).
  func subscribe() -> UInt64 {
    state.withLock { state in
      let id = state.nextSubscriber
      state.nextSubscriber += 1
      var subscriber = Subscriber()
      if let unclaimed = state.unclaimed {
        subscriber.buffer = unclaimed
        state.unclaimed = nil
      }
      state.subscribers[id] = subscriber
      return id
    }
  }

  /// The subscriber's next event, waiting for one; `nil` once the hub finished and the
  /// buffer is empty.
  nonisolated(nonsending) func next(_ subscriber: UInt64) async -> Element? {
    if let ready = takeBuffered(subscriber) { return ready.element }
    return await withUnsafeContinuation { continuation in
      var notify = false
      let outcome: Element?? = state.withLock { state in
        guard state.subscribers[subscriber] != nil else { return .some(nil) }
        if let item = state.subscribers[subscriber]!.buffer.popFirst() {
          notify = Self.take(item, &state)
          return .some(item.element)
        }
        if state.finished { return .some(nil) }
        state.subscribers[subscriber]!.waiter = continuation
        return .none
      }
      if notify { onClaimsSettled() }
      if case .some(let element) = outcome { continuation.resume(returning: element) }
    }
  }

  /// Takes the oldest buffered event, settling its claim. - Returns: nil when none is buffered.
  private func takeBuffered(_ subscriber: UInt64) -> Item? {
    var notify = false
    let item = state.withLock { state -> Item? in
      guard let item = state.subscribers[subscriber]?.buffer.popFirst() else { return nil }
      notify = Self.take(item, &state)
      return item
    }
    if notify { onClaimsSettled() }
    return item
  }

  /// The subscriber is gone: what it had not taken counts as taken.
  func unsubscribe(_ subscriber: UInt64) {
    var notify = false
    let waiter = state.withLock { state -> UnsafeContinuation<Element?, Never>? in
      guard var gone = state.subscribers.removeValue(forKey: subscriber) else { return nil }
      while let item = gone.buffer.popFirst() { notify = Self.take(item, &state) || notify }
      return gone.waiter
    }
    waiter?.resume(returning: nil)
    if notify { onClaimsSettled() }
  }

  /// One subscriber took an event. - Returns: whether the owner must be told (its claim is
  /// settled and none was waiting to be collected).
  private static func take(_ item: Item, _ state: inout State) -> Bool {
    guard let claim = item.claim else { return false }
    if let shared = item.shared {
      shared.remaining -= 1
      guard shared.remaining == 0 else { return false }
    }
    state.settled.append(claim)
    return state.settled.count == 1
  }
}

/// What the hub carries: a session's events, or a browser's or an advertiser's.
enum HubEvent: Sendable {
  case session(SessionEvent)
  case browser(NearbyBrowser.Event)
  case advertiser(NearbyAdvertiser.Event)
}

/// A subscriber's events in arrival order: a ring of one concrete element type. (NearbyCore's
/// generic `RingBuffer` ran unspecialized here, through type metadata at every call, and
/// grew element by element through the generic `append(contentsOf:)`.)
struct ItemQueue: Sendable {
  private var storage: [EventHub.Item?] = []
  private var head = 0
  private(set) var count = 0

  var isEmpty: Bool { count == 0 }

  mutating func append(_ item: EventHub.Item) {
    if count == storage.count { grow() }
    var index = head + count
    if index >= storage.count { index -= storage.count }
    storage[index] = item
    count += 1
  }

  mutating func popFirst() -> EventHub.Item? {
    guard count > 0 else { return nil }
    let item = storage[head].take()
    head += 1
    if head == storage.count { head = 0 }
    count -= 1
    if count == 0 { head = 0 }
    return item
  }

  private mutating func grow() {
    var grown = [EventHub.Item?](repeating: nil, count: max(16, storage.count * 2))
    for offset in 0..<count {
      var index = head + offset
      if index >= storage.count { index -= storage.count }
      grown[offset] = storage[index].take()
    }
    storage = grown
    head = 0
  }
}
