// One file: the hub, its subscribers' cursors and their queues share the bookkeeping of
// claims (an event's claim settles once every subscriber that was handed it took it); split,
// each would reach into the others' internals.

import NearbyCore
import NearbyTransport
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
    /// It starts something anew (``SessionAction/emitFresh(_:)``): see ``ItemQueue``.
    let fresh: Bool

    init(_ element: Element, claim: Claim? = nil, shared: ClaimCount? = nil, fresh: Bool = false) {
      self.element = element
      self.claim = claim
      self.shared = shared
      self.fresh = fresh
    }
  }

  /// How many subscribers still have to take an event before its claim is settled. Only
  /// touched under the lock of ``claims``.
  final class ClaimCount: @unchecked Sendable {
    let claim: Claim
    var remaining: Int
    init(_ claim: Claim, remaining: Int) {
      self.claim = claim
      self.remaining = remaining
    }
  }

  struct Subscriber {
    let id: UInt64
    var buffer = ItemQueue()
    var waiter: UnsafeContinuation<Element?, Never>?
  }

  struct State {
    /// In the order they subscribed. An array, not a dictionary: there are a few, and
    /// finding one by id must not hash (SipHash per event showed in profiles).
    var subscribers: [Subscriber] = []
    var nextSubscriber: UInt64 = 1
    /// Events published before anyone subscribed, for the first subscriber.
    var unclaimed: ItemQueue? = ItemQueue()
    var finished = false
  }

  private let state = Mutex(State())
  /// Claims whose events every subscriber has taken, not yet handed to the owner. A lock of
  /// their own: a subscriber hands events of a batch out one by one without taking the
  /// hub's. (Order: ``state`` before ``claims``, never the other way round.)
  private let claims = Mutex<[Claim]>([])
  /// Called (from the thread that settled them) when claims become settled and none were
  /// waiting before; the owner then collects them with ``takeSettledClaims(into:)``.
  private let onClaimsSettled: @Sendable () -> Void

  init(onClaimsSettled: @escaping @Sendable () -> Void = {}) {
    self.onClaimsSettled = onClaimsSettled
  }

  // MARK: Producing

  /// An event to publish, with its claim (`nil`: none). A struct, not a tuple: a tuple of
  /// these types was copied through the runtime's generic tuple witness (metadata lookups,
  /// about 190 instructions a copy), and reading its claim copied the whole pair, four
  /// times per message; a struct's fields are read in place through the buffer pointer.
  struct Publication {
    var element: Element
    var claim: Claim?
    var fresh = false
  }

  /// Publishes events in order.
  func publish(_ elements: [Publication]) {
    elements.withUnsafeBufferPointer { publish($0) }
  }

  /// Publishes events in order, from storage kept elsewhere (no copy of the slice first).
  func publish(_ elements: ArraySlice<Publication>) {
    elements.withUnsafeBufferPointer { publish($0) }
  }

  func publish(_ element: Element, claim: Claim? = nil, fresh: Bool = false) {
    var one = Publication(element: element, claim: claim, fresh: fresh)
    withUnsafePointer(to: &one) { publish(UnsafeBufferPointer(start: $0, count: 1)) }
  }

  private func publish(_ elements: UnsafeBufferPointer<Publication>) {
    // Usually one subscriber waits for one event: that resume needs no array (an array
    // here was a heap allocation per message). Waiters are noted with the index of their
    // event, which is copied once, into the resume (copying it into the note and out again
    // cost three copies of each event, a retain and a release of each of its fields).
    var resume: UnsafeContinuation<Element?, Never>?
    var resumeIndex = 0
    var resumes: [(UnsafeContinuation<Element?, Never>, Int)] = []
    var notify = false
    state.withLock { state in
      guard !state.finished else { return }
      for index in elements.indices {
        let claim = elements[index].claim
        if state.subscribers.isEmpty {
          if state.unclaimed != nil {
            state.unclaimed!.append(Item(elements[index].element, claim: claim, fresh: elements[index].fresh))
          } else {
            // Every subscriber has gone: the event goes nowhere, and counts as taken, as
            // those left in a subscriber's buffer do (a claim that never settled kept its
            // connection's messages counted, and the connection unread, for good).
            notify = take(claim, shared: nil) || notify
          }
          continue
        }
        let shared = state.subscribers.count > 1 ? claim.map { ClaimCount($0, remaining: state.subscribers.count) } : nil
        for subscriber in 0..<state.subscribers.count {
          if let waiter = state.subscribers[subscriber].waiter {
            state.subscribers[subscriber].waiter = nil
            if resume == nil {
              resume = waiter
              resumeIndex = index
            } else {
              resumes.append((waiter, index))
            }
            notify = take(claim, shared: shared) || notify
          } else {
            state.subscribers[subscriber].buffer.append(Item(elements[index].element, claim: claim, shared: shared, fresh: elements[index].fresh))
          }
        }
      }
    }
    if let resume { resume.resume(returning: elements[resumeIndex].element) }
    for (waiter, index) in resumes { waiter.resume(returning: elements[index].element) }
    if notify { onClaimsSettled() }
  }

  /// Ends the sequence: subscribers get what is buffered, then `nil`.
  func finish() {
    let waiters = state.withLock { state -> [UnsafeContinuation<Element?, Never>] in
      state.finished = true
      var waiters: [UnsafeContinuation<Element?, Never>] = []
      for index in 0..<state.subscribers.count {
        if let waiter = state.subscribers[index].waiter { waiters.append(waiter) }
        state.subscribers[index].waiter = nil
      }
      return waiters
    }
    for waiter in waiters { waiter.resume(returning: nil) }
  }

  /// Swaps the claims settled since the last call into `claims`, which must be empty; the
  /// hub keeps its array for the next ones (no allocation per batch: returning a copy and
  /// emptying the original allocated one).
  func takeSettledClaims(into claims: inout [Claim]) {
    precondition(claims.isEmpty, "takeSettledClaims(into:) needs an empty array")
    self.claims.withLock { settled in swap(&settled, &claims) }
  }

  /// How many events wait in the fullest subscriber's buffer (diagnostics and tests).
  var deepestBuffer: Int {
    state.withLock { state in
      max(state.unclaimed?.count ?? 0, state.subscribers.map(\.buffer.count).max() ?? 0)
    }
  }

  // MARK: Consuming

  /// A new subscriber: it sees every event published from now on (the first one also gets
  /// those published before anybody subscribed).
  func subscribe() -> UInt64 {
    state.withLock { state in
      let id = state.nextSubscriber
      state.nextSubscriber += 1
      var subscriber = Subscriber(id: id)
      if let unclaimed = state.unclaimed {
        subscriber.buffer = unclaimed
        state.unclaimed = nil
      }
      state.subscribers.append(subscriber)
      return id
    }
  }

  /// The subscriber's next event, waiting for one; `nil` once the hub finished and the
  /// buffer is empty. (Its cursor has just found the buffer empty: what came since is taken
  /// under the same lock that registers the waiter, without a lock of its own first.)
  ///
  /// The continuation is made where the caller runs (the inheriting variant): the default
  /// `withUnsafeContinuation(isolation:)` first switched to its isolation, which is the
  /// caller's own (nil for a task that prefers the session's executor), at the cost of a
  /// `swift_task_switch` per event, about 1 300 instructions of a pinned round trip in
  /// callgrind. The task resumes where it suspended either way.
  nonisolated(nonsending) func next(_ subscriber: UInt64) async -> Element? {
    await _unsafeInheritExecutor_withUnsafeContinuation { continuation in
      var notify = false
      let outcome: Element?? = state.withLock { state in
        guard let index = state.subscribers.firstIndex(where: { $0.id == subscriber }) else { return .some(nil) }
        if let item = state.subscribers[index].buffer.popFirst() {
          notify = take(item)
          return .some(item.element)
        }
        if state.finished { return .some(nil) }
        state.subscribers[index].waiter = continuation
        return .none
      }
      if notify { onClaimsSettled() }
      if case .some(let element) = outcome { continuation.resume(returning: element) }
    }
  }

  /// Up to `limit` of the subscriber's buffered events at once (one lock for all), oldest
  /// first. Their claims are not settled yet: ``handOut(_:)`` settles each as it reaches the
  /// application, and ``discard(_:)`` those that never will.
  func takeBatch(_ subscriber: UInt64, limit: Int) -> [Item] {
    state.withLock { state -> [Item] in
      guard let index = state.subscribers.firstIndex(where: { $0.id == subscriber }), !state.subscribers[index].buffer.isEmpty else { return [] }
      var batch: [Item] = []
      batch.reserveCapacity(min(limit, state.subscribers[index].buffer.count))
      while batch.count < limit, let item = state.subscribers[index].buffer.popFirst() { batch.append(item) }
      return batch
    }
  }

  /// An event of a batch reaches the application: its claim is settled.
  func handOut(_ item: Item) {
    guard item.claim != nil else { return }
    if take(item) { onClaimsSettled() }
  }

  /// Events of a batch that will not reach the application (its iteration ended): they
  /// count as taken, as those left in a subscriber's buffer do.
  func discard(_ items: some Sequence<Item>) {
    var notify = false
    for item in items where item.claim != nil { notify = take(item) || notify }
    if notify { onClaimsSettled() }
  }

  /// The subscriber is gone: what it had not taken counts as taken.
  func unsubscribe(_ subscriber: UInt64) {
    var notify = false
    let waiter = state.withLock { state -> UnsafeContinuation<Element?, Never>? in
      guard let index = state.subscribers.firstIndex(where: { $0.id == subscriber }) else { return nil }
      var gone = state.subscribers.remove(at: index)
      while let item = gone.buffer.popFirst() { notify = take(item) || notify }
      return gone.waiter
    }
    waiter?.resume(returning: nil)
    if notify { onClaimsSettled() }
  }

  /// One subscriber took an event. - Returns: whether the owner must be told (its claim is
  /// settled and none was waiting to be collected).
  private func take(_ item: Item) -> Bool { take(item.claim, shared: item.shared) }

  /// ``take(_:)`` of an event's claim, without an item (one copy of the event fewer).
  private func take(_ claim: Claim?, shared: ClaimCount?) -> Bool {
    guard let claim else { return false }
    return claims.withLock { settled in
      if let shared {
        shared.remaining -= 1
        guard shared.remaining == 0 else { return false }
      }
      settled.append(claim)
      return settled.count == 1
    }
  }
}

/// One subscriber's reading end of a hub: it takes buffered events a batch at a time (one lock
/// of the hub per batch instead of one per event) and hands them out one by one, settling
/// each event's claim as it does. Used by one iteration at a time; ending it (its last
/// iterator gone) counts what it still held as taken.
final class EventCursor: Sendable {
  let hub: EventHub
  let id: UInt64
  /// Events of the current batch not handed out yet, and where the next one is.
  private let batch = Mutex<(items: [EventHub.Item], next: Int)>(([], 0))
  /// Events taken from the hub at once. Small enough that a slow consumer's messages stay in
  /// the hub's buffer, where the session counts them.
  static let batchSize = 64

  /// The session's I/O thread, when the cursor reads a session's events: a consumer that
  /// works through a flood there yields now and then (see ``next()``).
  let loop: EventLoop?

  init(hub: EventHub, loop: EventLoop? = nil) {
    self.hub = hub
    self.loop = loop
    self.id = hub.subscribe()
  }

  /// Events handed out since the clock was last looked at, and when the current slice
  /// began: at the first full batch after a wait, or at a yield (0: not yet). See ``next()``.
  private let streak = Atomic<Int>(0)
  private let sliceStart = Atomic<UInt64>(0)
  /// How long a consumer may work through buffered events before it yields: 1 ms.
  static let slice: UInt64 = 1_000_000

  /// The next event, waiting for one; `nil` once the hub finished and nothing is left.
  ///
  /// Buffered events are handed out without suspending, so a consumer working through a
  /// flood of them holds its thread until the flood ends. On the session's I/O thread that
  /// stopped reading, timers and heartbeats: there, every ``batchSize`` events it looks at
  /// the clock, and yields (`Task.yield()`) once it has gone ``slice`` without waiting.
  /// Elsewhere (Swift's pool) it does not: there a yield puts a flooded consumer behind
  /// every other task of a busy pool, and whether that is better for an application than
  /// holding one of the pool's threads was not settled (a relay test that failed in full
  /// parallel runs with the yield on the pool failed without it too).
  // Inlined into the subscription's, and that into the iterator's: each async call between
  // them took a frame from the task's allocator per event.
  @inline(__always)
  nonisolated(nonsending) func next() async -> HubEvent? {
    if let loop, loop.isCurrent, streak.add(1, ordering: .relaxed).newValue >= Self.batchSize {
      streak.store(0, ordering: .relaxed)
      let started = sliceStart.load(ordering: .relaxed)
      let now = EventLoop.monotonicNanoseconds()
      if started == 0 {
        // The first batch after a wait: the slice starts now (a wait does not read the
        // clock, which cost a system-library call per event of a ping-pong).
        sliceStart.store(now, ordering: .relaxed)
      } else if now &- started >= Self.slice {
        await Task.yield()
        sliceStart.store(EventLoop.monotonicNanoseconds(), ordering: .relaxed)
      }
    }
    if let item = takeFromBatch() ?? refill() {
      hub.handOut(item)
      return item.element
    }
    // Nothing buffered: this usually waits, which lets other work run; the next slice
    // starts with the next full batch.
    if loop != nil {
      streak.store(0, ordering: .relaxed)
      sliceStart.store(0, ordering: .relaxed)
    }
    return await hub.next(id)
  }

  private func takeFromBatch() -> EventHub.Item? {
    batch.withLock { batch -> EventHub.Item? in
      guard batch.next < batch.items.count else { return nil }
      defer { batch.next += 1 }
      return batch.items[batch.next]
    }
  }

  /// Takes the next batch from the hub. - Returns: its first event (the rest wait here), or
  /// nil when the hub has none buffered.
  private func refill() -> EventHub.Item? {
    var items = hub.takeBatch(id, limit: Self.batchSize)
    guard !items.isEmpty else { return nil }
    let first = items[0]
    batch.withLock { batch in
      swap(&batch.items, &items)
      batch.next = 1
    }
    return first
  }

  deinit {
    let left = batch.withLock { batch in batch.items[batch.next...] }
    hub.discard(left)
    hub.unsubscribe(id)
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
///
/// While its subscriber is ``supersedeAfter`` events behind (or more), an event about a peer's
/// discovery or reachability replaces the one about the same thing still waiting: the
/// waiting one is taken out and the newer goes at the end, merged so that the subscriber ends
/// up knowing what it would have known (``EventHub/Item/superseding(_:)``); events about
/// foreign services are left out. Without it, a peer that did not read its events kept every
/// one of them: a relay sending ROSTER additions and removals of made-up peers, 64 frames of
/// 4 096 a second, was a quarter of a million events a second, and discovery churn on the LAN
/// added its own. A reachability event followed by anything else about its peer (a message,
/// a receipt, `disconnected`) is no longer replaced, as in ``HeldMessages``: the reader learns
/// that a peer became reachable before it reads what the peer sent.
struct ItemQueue: Sendable {
  private var storage: [EventHub.Item?] = []
  private var head = 0
  /// Slots in use from `head`: waiting events and the holes superseded ones left.
  private var used = 0
  /// Waiting events.
  private(set) var count = 0
  /// The position (counted from the first event ever queued) of `storage[head]`.
  private var headPosition = 0
  /// While behind: the waiting event about each thing, by position.
  private var waiting: [HubEvent.SupersedingKey: Int] = [:]
  /// How far behind a subscriber is before newer events supersede waiting ones (1 024;
  /// tests make it small).
  let supersedeAfter: Int

  init(supersedeAfter: Int = 1024) { self.supersedeAfter = supersedeAfter }

  var isEmpty: Bool { count == 0 }

  /// Slots of storage (waiting events and holes: at most about twice the events; tests).
  var capacity: Int { storage.count }

  // The usual path (nothing to supersede) is inlined into the hub's publish and take, and
  // events are consumed, not borrowed: borrowed, each was built in a temporary and copied
  // into the ring (its payload retained and released), and 64-byte messages went about a
  // tenth slower.
  @inline(__always)
  mutating func append(_ item: consuming EventHub.Item) {
    if count < supersedeAfter && waiting.isEmpty {
      place(item)
    } else {
      appendSuperseding(item)
    }
  }

  // Without holes and with nothing superseding, the slot at `head` is the event, handed out
  // as taken from storage: looking into it first (for a hole) copied every event once more
  // and destroyed the copy, about 370 instructions an event, which took 64-byte throughput
  // down by several percent.
  @inline(__always)
  mutating func popFirst() -> EventHub.Item? {
    guard used > 0 else { return nil }
    guard used == count, waiting.isEmpty else { return popFirstPastHoles() }
    let item = storage[head].take()
    advanceHead()
    count -= 1
    return item
  }

  @inline(__always)
  private mutating func advanceHead() {
    head += 1
    if head == storage.count { head = 0 }
    headPosition += 1
    used -= 1
  }

  /// ``popFirst()`` where superseded events left holes, or waiting ones are tracked.
  @inline(never)
  private mutating func popFirstPastHoles() -> EventHub.Item? {
    while used > 0 {
      let position = headPosition
      guard let item = storage[head].take() else {
        advanceHead()
        continue
      }
      advanceHead()
      count -= 1
      if !waiting.isEmpty { taken(item, at: position) }
      return item
    }
    return nil
  }

  /// An event that may supersede one waiting, or be superseded later.
  @inline(never)
  private mutating func appendSuperseding(_ item: consuming EventHub.Item) {
    // Anything else about a peer (its message, a receipt, `disconnected`) keeps the waiting
    // event about its reachability where it is: superseded, a fresh `reachable` before a
    // message of its peer and an `unreachable` after it made nothing, and the reader read a
    // message from a peer it never saw reachable.
    if let claim = item.claim {
      if !waiting.isEmpty { waiting[.reach(claim.taken.origin)] = nil }
      place(item)
      return
    }
    let key = item.element.supersedingKey
    if !waiting.isEmpty, case .session(let event) = item.element, let peer = event.concernedPeer, key != .reach(peer) {
      waiting[.reach(peer)] = nil
    }
    guard let key else {
      place(item)
      return
    }
    guard count >= supersedeAfter else {
      // Caught up meanwhile: this one goes as it is, and nothing older is superseded any
      // more (only the last waiting event about a thing may be).
      waiting[key] = nil
      place(item)
      return
    }
    // Foreign services are news to a person at the screen, and ones with new names come
    // without end: a reader this far behind does without them.
    if case .foreign = key { return }
    var item = item
    if let position = waiting.removeValue(forKey: key), let old = storage[index(of: position)].take() {
      count -= 1
      guard let merged = old.superseding(item) else { return }
      item = merged
    }
    place(item)
    waiting[key] = headPosition + used - 1
    // Holes are as many as the superseded events: closed up once they outnumber the rest.
    if used > 2 * count + 64 { compact() }
  }

  /// A waiting event was taken: it is no longer the one a newer one supersedes.
  @inline(never)
  private mutating func taken(_ item: borrowing EventHub.Item, at position: Int) {
    if let key = item.element.supersedingKey, waiting[key] == position { waiting[key] = nil }
  }

  private func index(of position: Int) -> Int {
    var index = head + (position - headPosition)
    if index >= storage.count { index -= storage.count }
    return index
  }

  @inline(__always)
  private mutating func place(_ item: consuming EventHub.Item) {
    if used == storage.count { grow() }
    var index = head + used
    if index >= storage.count { index -= storage.count }
    storage[index] = item
    used += 1
    count += 1
  }

  /// Twice the room, the events (and holes) where they were relative to `head`: positions
  /// stay valid. (Moved as they are, not unwrapped: see ``popFirst()``.)
  private mutating func grow() {
    var grown = [EventHub.Item?](repeating: nil, count: max(16, storage.count * 2))
    for offset in 0..<used {
      var index = head + offset
      if index >= storage.count { index -= storage.count }
      grown[offset] = storage[index].take()
    }
    storage = grown
    head = 0
  }

  /// Moves the waiting events to the front of a new storage, without the holes.
  private mutating func compact() { relayout(capacity: max(16, storage.count)) }

  private mutating func relayout(capacity: Int) {
    var moved = [EventHub.Item?](repeating: nil, count: capacity)
    var kept = 0
    var positions: [HubEvent.SupersedingKey: Int] = [:]
    for offset in 0..<used {
      var index = head + offset
      if index >= storage.count { index -= storage.count }
      guard let item = storage[index].take() else { continue }
      if !waiting.isEmpty, let key = item.element.supersedingKey, waiting[key] == headPosition + offset {
        positions[key] = headPosition + kept
      }
      moved[kept] = item
      kept += 1
    }
    storage = moved
    head = 0
    used = kept
    waiting = positions
  }
}

extension HubEvent {
  /// What a newer event about the same thing supersedes while a subscriber is behind.
  enum SupersedingKey: Hashable, Sendable {
    case discovery(PeerID)
    case reach(PeerID)
    case foreign(String)
  }

  var supersedingKey: SupersedingKey? {
    switch self {
    case .session(.found(let peer)), .session(.updated(let peer)): .discovery(peer.peer.id)
    case .session(.lost(let peer)): .discovery(peer.id)
    case .session(.reachable(let peer, _)), .session(.unreachable(let peer)): .reach(peer.id)
    case .session(.status(.foreignService(let instance, _))): .foreign(instance)
    case .browser(.found(let peer)), .browser(.updated(let peer)): .discovery(peer.peer.id)
    case .browser(.lost(let peer)): .discovery(peer.id)
    case .browser(.foreign(let instance, _)): .foreign(instance)
    default: nil
    }
  }
}

extension EventHub.Item {
  /// This waiting event and a newer one about the same thing, as one (`nil`: neither is
  /// worth telling). The reader has not seen this one, so what it knows is what came before:
  /// a peer found and lost again is news to nobody (a peer is found only when it was not
  /// known), and so is a peer that became reachable (fresh: it was not) and unreachable
  /// again; a peer found and then updated is found (with what changed); a peer lost and
  /// found again is updated. Otherwise the newer one says it all (a reachable that was not
  /// fresh followed a reachable through another relay: its unreachable stays), keeping this
  /// one's freshness when it is the same kind of news.
  func superseding(_ newer: EventHub.Item) -> EventHub.Item? {
    switch (element, newer.element) {
    case (.session(.found), .session(.lost)), (.browser(.found), .browser(.lost)): nil
    case (.session(.reachable), .session(.unreachable)) where fresh: nil
    case (.session(.reachable), .session(.reachable)): EventHub.Item(newer.element, fresh: fresh)
    case (.session(.unreachable), .session(.reachable)): EventHub.Item(newer.element)
    case (.session(.found), .session(.updated(let peer))): EventHub.Item(.session(.found(peer)))
    case (.browser(.found), .browser(.updated(let peer))): EventHub.Item(.browser(.found(peer)))
    case (.session(.lost), .session(.found(let peer))): EventHub.Item(.session(.updated(peer)))
    case (.browser(.lost), .browser(.found(let peer))): EventHub.Item(.browser(.updated(peer)))
    default: EventHub.Item(newer.element)
    }
  }
}
