// One file: the epoll loop, its timers, cross-thread wakeups and task executor share one
// thread-confined state; splitting them would spread the one-thread rule across files.

import CNearbySystem
import Dispatch
import NearbyCore
import NearbySystem
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// Something the event loop notifies when its file descriptor is ready.
/// Called on the loop's thread only.
package protocol EventLoopHandler: AnyObject {
  /// - Parameter events: the epoll event bits (`NEARBY_EPOLLIN`, ...).
  func handle(events: UInt32)
}

/// One I/O thread running `epoll_wait`, plus a queue of work other threads hand it and a
/// few timers. Blocking waits live here, never on Swift's cooperative pool; everything that
/// touches a registered descriptor happens on this thread.
package final class EventLoop: @unchecked Sendable {
  private struct Timer {
    let id: UInt64
    let deadline: UInt64
    let work: () -> Void
  }

  /// Something queued for the loop thread: a closure, or a job of Swift concurrency (queued
  /// without wrapping it in a closure: the hot path of every event and every send).
  enum Work: @unchecked Sendable {
    case closure(@Sendable () -> Void)
    /// A job of the actor whose serial executor this loop is.
    case actorJob(UnownedJob)
    /// A job of a task that prefers this loop's task executor.
    case taskJob(UnownedJob, UnownedTaskExecutor)
  }

  private struct Shared {
    var work: [Work] = []
    var stopping = false
  }

  package let name: String
  private let epoll: Int32
  private let wakeFD: Int32
  /// Fires at the earliest timer's deadline: the loop sleeps in `epoll_wait` without a
  /// timeout and reads no clock per iteration.
  private let timerFD: Int32
  private let shared = Mutex(Shared())
  private let signalled = Atomic<Bool>(false)
  /// Threads in ``submit(_:)`` from off the loop, between queueing and waking it.
  private let waking = Atomic<Int>(0)
  private var thread = pthread_t()
  private let threadID = Atomic<UInt64>(0)
  private let finished = Mutex<CheckedContinuation<Void, Never>?>(nil)
  private let hasFinished = Atomic<Bool>(false)
  private let closedDescriptors = Atomic<Bool>(false)
  /// Runs jobs enqueued after the loop stopped (see ``enqueue(_:)``); made on first use.
  private let afterStopQueue = Mutex<DispatchQueue?>(nil)
  private let token = UInt64.random(in: 1...UInt64.max)
  private var afterStop: DispatchQueue {
    afterStopQueue.withLock { queue in
      if let queue { return queue }
      let made = DispatchQueue(label: "\(name).after-stop")
      made.setSpecific(key: Self.afterStopKey, value: token)
      queue = made
      return made
    }
  }
  static let afterStopKey = DispatchSpecificKey<UInt64>()

  // Loop thread only.
  /// Where connections read what they do not keep (handshake messages, which are consumed at
  /// once, and bytes discarded while closing): one buffer per loop instead of one each.
  package let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: 16_384, alignment: 16)
  // The stored properties below are `@exclusivity(unchecked)`: only the loop thread uses them,
  // and the runtime's check of every access to a class's property was about a tenth of the
  // instructions of a message's round trip (callgrind; see the README's benchmarks).
  @exclusivity(unchecked) private var deferred: [Deferred] = []
  /// The deferred work being run, swapped with ``deferred`` (copying it and emptying the
  /// copy allocated a new array per iteration).
  @exclusivity(unchecked) private var runningDeferred: [Deferred] = []
  /// The work being run (swapped with the queue: no allocation per iteration).
  @exclusivity(unchecked) private var running: [Work] = []
  @exclusivity(unchecked) private var handlers: [Int32: any EventLoopHandler] = [:]
  @exclusivity(unchecked) private var timers: [Timer] = []
  /// Whether to poll after activity (adaptive busy polling).
  @exclusivity(unchecked) private var pollPolicy: BusyPollPolicy
  /// The longest the loop polls after activity (zero: it never polls).
  package let busyPollWindow: Duration
  /// Loops of this process polling right now: at most one fewer than there are CPUs, so that
  /// polling threads never take every CPU from the others (none on one CPU).
  private static let pollingLoops = Atomic<Int>(0)
  private static let maximumPollingLoops = max(0, sysconf(Int32(_SC_NPROCESSORS_ONLN)) - 1)
  @exclusivity(unchecked) private var nextTimerID: UInt64 = 1
  /// Counts the loop's iterations (a clock that costs nothing to read: a connection tells
  /// from it whether its reads come back to back).
  @exclusivity(unchecked) package private(set) var iteration: UInt64 = 0
  /// The deadline the timer descriptor is armed for (0: disarmed).
  @exclusivity(unchecked) private var armedDeadline: UInt64 = 0

  /// Creates the loop and starts its thread.
  /// - Throws: ``SystemError`` when epoll, eventfd or the thread cannot be created.
  /// - Parameter busyPoll: after handling something, poll up to this long before sleeping,
  ///   while the next event has recently come within that time (see
  ///   ``SessionConfiguration/busyPoll``, 200 µs by default for a session); zero (the default
  ///   here) sleeps at once. Ignored when the calling thread may run on one CPU only
  ///   (`taskset -c 0`, say): the loop's thread inherits that, and a thread that polls there
  ///   only delays the peer it waits for.
  package init(name: String = "nearby-io", busyPoll: Duration = .zero) throws(SystemError) {
    _ = ignoreSIGPIPE
    self.name = name
    self.busyPollWindow = nearby_allowed_cpus() == 1 ? .zero : busyPoll
    self.pollPolicy = BusyPollPolicy(window: busyPollWindow)
    let epoll = nearby_epoll_create()
    guard epoll >= 0 else { throw SystemError("epoll_create1", errno: errno) }
    let wake = nearby_eventfd()
    guard wake >= 0 else {
      close(epoll)
      throw SystemError("eventfd", errno: errno)
    }
    let timer = nearby_timerfd()
    guard timer >= 0 else {
      let code = errno
      close(epoll)
      close(wake)
      throw SystemError("timerfd_create", errno: code)
    }
    self.epoll = epoll
    self.wakeFD = wake
    self.timerFD = timer
    for fd in [wake, timer] {
      guard nearby_epoll_ctl(epoll, NEARBY_EPOLL_CTL_ADD, fd, NEARBY_EPOLLIN, UInt64(UInt32(bitPattern: fd))) == 0 else {
        let code = errno
        close(epoll)
        close(wake)
        close(timer)
        closedDescriptors.store(true, ordering: .releasing)  // deinit runs, and must not close them again
        throw SystemError("epoll_ctl", errno: code)
      }
    }
    let box = Unmanaged.passRetained(self)
    let result = pthread_create(
      &thread, nil,
      { context in
        let loop = Unmanaged<EventLoop>.fromOpaque(context!).takeRetainedValue()
        loop.run()
        return nil
      }, box.toOpaque())
    guard result == 0 else {
      box.release()
      close(epoll)
      close(wake)
      close(timer)
      closedDescriptors.store(true, ordering: .releasing)  // deinit runs, and must not close them again
      throw SystemError("pthread_create", errno: result)
    }
  }

  deinit {
    scratch.deallocate()
    if !closedDescriptors.load(ordering: .acquiring) {
      // Never shut down (stopped by ``requestStop()``): nobody joins the thread, which has
      // ended or is ending (it held the last reference); detached, its stack is freed.
      pthread_detach(thread)
      close(epoll)
      close(wakeFD)
      close(timerFD)
    }
  }

  /// Whether the caller runs on the loop's thread.
  package var inLoop: Bool { UInt64(pthread_self()) == threadID.load(ordering: .acquiring) }

  /// Runs `work` on the loop thread, soon (dropped once the loop is stopping, unless the
  /// loop thread itself queues it: the loop's last iterations run that).
  package func execute(_ work: @escaping @Sendable () -> Void) {
    _ = submit(.closure(work))
  }

  /// Runs `work` on the loop thread and returns what it returns: for callers on other
  /// threads (tests, tools) of what only the loop thread may touch, such as a connection's
  /// queue. - Returns: `nil`, without running `work`, when the loop is stopping.
  package func perform<Value: Sendable>(_ work: @escaping @Sendable () -> Value) async -> Value? {
    if inLoop { return work() }
    return await withCheckedContinuation { (continuation: CheckedContinuation<Value?, Never>) in
      let taken = Mutex(Optional(continuation))
      let queued = submit(.closure { taken.withLock { $0.take() }?.resume(returning: work()) })
      if !queued { taken.withLock { $0.take() }?.resume(returning: nil) }
    }
  }

  /// Queues `work` for the loop thread. - Returns: `false` when the loop is stopping, except
  /// for a closure queued by the loop thread: its last iterations run those (a connection
  /// that a handler of the last iteration closed at once was left open, with its descriptor,
  /// when its close was dropped). Jobs go to the queue that replaces the loop instead, and
  /// other threads' closures are dropped: the loop must come to an end.
  @discardableResult
  func submit(_ work: Work) -> Bool {
    if inLoop {
      // The loop thread wakes nobody (it is awake); its closures are taken while it stops.
      var isClosure = false
      if case .closure = work { isClosure = true }
      return shared.withLock { state -> Bool in
        if state.stopping && !isClosure { return false }
        state.work.append(work)
        return true
      }
    }
    // Counted from before queueing until after waking: ``shutdown()`` closes the wake-up
    // descriptor only once none is between the two (a thread preempted there wrote its 8
    // bytes to the number after the loop ended and the kernel gave it to another socket or
    // file). Waking under the lock would do the same with a system call inside the lock.
    waking.add(1, ordering: .acquiring)
    defer { waking.subtract(1, ordering: .releasing) }
    let accepted = shared.withLock { state -> Bool in
      if state.stopping { return false }
      state.work.append(work)
      return true
    }
    guard accepted else { return false }
    if !signalled.exchange(true, ordering: .acquiringAndReleasing) {
      _ = nearby_eventfd_signal(wakeFD)
    }
    return true
  }

  /// Runs `work` on the loop thread after everything of the current iteration (handlers,
  /// timers, queued work), before the loop waits again. Loop thread only. (Connections write
  /// once for all the frames queued during an iteration through ``flushAfterIteration(_:)``.)
  package func afterIteration(_ work: @escaping () -> Void) {
    precondition(inLoop, "afterIteration must run on the event loop")
    deferred.append(.closure(work))
  }

  /// ``afterIteration(_:)`` for a connection's write of what it queued: the connection
  /// itself is kept, not a closure that calls it (whose context was a heap allocation per
  /// message sent, and a closure kept in an array of closures a second one, for the thunk
  /// that adapts it to the array's element type).
  func flushAfterIteration(_ connection: TCPConnection) {
    precondition(inLoop, "flushAfterIteration must run on the event loop")
    deferred.append(.flush(connection))
  }

  /// Work that runs after an iteration (an enum, not an array of closures: see
  /// ``flushAfterIteration(_:)``).
  private enum Deferred {
    case closure(() -> Void)
    case flush(TCPConnection)
  }

  /// Asks the loop to stop after the work already queued, without waiting for it (for an
  /// owner that goes away without ``shutdown()``: the thread then ends and releases the loop,
  /// whose descriptors close with it).
  package func requestStop() {
    waking.add(1, ordering: .acquiring)
    defer { waking.subtract(1, ordering: .releasing) }
    let first = shared.withLock { state -> Bool in
      defer { state.stopping = true }
      return !state.stopping
    }
    if first { _ = nearby_eventfd_signal(wakeFD) }
  }

  /// Whether ``shutdown()`` (or ``requestStop()``) was called.
  package var isStopping: Bool { shared.withLock { $0.stopping } }

  /// Stops the loop after the work already queued, and waits for its thread to end.
  /// Handlers still registered are dropped (their owners close their descriptors first).
  package func shutdown() async {
    requestStop()
    await withCheckedContinuation { continuation in
      let done = finished.withLock { stored -> Bool in
        if hasFinished.load(ordering: .acquiring) { return true }
        stored = continuation
        return false
      }
      if done { continuation.resume() }
    }
    // The thread has left run(); joining takes no time. Once: a second join is undefined
    // (shutdown() may be called from several places).
    guard !closedDescriptors.exchange(true, ordering: .acquiringAndReleasing) else { return }
    pthread_join(thread, nil)
    // Nothing is queued any more (the loop is stopping); a thread that queued before may
    // still be about to wake it, for a moment.
    while waking.load(ordering: .acquiring) != 0 { sched_yield() }
    close(epoll)
    close(wakeFD)
    close(timerFD)
  }

  // MARK: Loop thread API

  /// Watches `fd` for `events`. Loop thread only.
  package func register(_ fd: Int32, events: UInt32, handler: any EventLoopHandler) throws(SystemError) {
    precondition(inLoop, "register must run on the event loop")
    guard nearby_epoll_ctl(epoll, NEARBY_EPOLL_CTL_ADD, fd, events, UInt64(UInt32(bitPattern: fd))) == 0 else {
      throw SystemError("epoll_ctl(ADD)", errno: errno)
    }
    handlers[fd] = handler
  }

  /// Changes the events watched on `fd`. Loop thread only.
  package func reregister(_ fd: Int32, events: UInt32) {
    precondition(inLoop, "reregister must run on the event loop")
    _ = nearby_epoll_ctl(epoll, NEARBY_EPOLL_CTL_MOD, fd, events, UInt64(UInt32(bitPattern: fd)))
  }

  /// Stops watching `fd` (call before closing it). Loop thread only.
  package func deregister(_ fd: Int32) {
    precondition(inLoop, "deregister must run on the event loop")
    guard handlers.removeValue(forKey: fd) != nil else { return }
    _ = nearby_epoll_ctl(epoll, NEARBY_EPOLL_CTL_DEL, fd, 0, 0)
  }

  /// Runs `work` on the loop after `delay`. Loop thread only.
  /// - Returns: an id for ``cancelTimer(_:)``.
  @discardableResult
  package func schedule(after delay: Duration, _ work: @escaping () -> Void) -> UInt64 {
    precondition(inLoop, "schedule must run on the event loop")
    let id = nextTimerID
    nextTimerID += 1
    let nanoseconds = UInt64(max(0, delay.components.seconds)) * 1_000_000_000 + UInt64(max(0, delay.components.attoseconds / 1_000_000_000))
    let deadline = Self.monotonicNanoseconds() + nanoseconds
    timers.append(Timer(id: id, deadline: deadline, work: work))
    if armedDeadline == 0 || deadline < armedDeadline { arm(deadline) }
    return id
  }

  /// Cancels a timer that has not fired. Loop thread only. (The descriptor stays armed: an
  /// early wake-up finds nothing due and arms it for the next deadline.)
  package func cancelTimer(_ id: UInt64) {
    timers.removeAll { $0.id == id }
  }

  private func arm(_ deadline: UInt64) {
    armedDeadline = deadline
    _ = nearby_timerfd_arm(timerFD, deadline)
  }

  /// Busy polling: `epoll_wait` without sleeping until something arrives or `deadline`
  /// passes, when fewer than ``maximumPollingLoops`` loops already poll.
  /// - Returns: how many events arrived (0: none; the caller then sleeps).
  private func poll(until deadline: UInt64, into events: inout [nearby_epoll_event]) -> Int32 {
    defer { Self.pollingLoops.subtract(1, ordering: .relaxed) }
    guard Self.pollingLoops.add(1, ordering: .relaxed).newValue <= Self.maximumPollingLoops else { return 0 }
    var count: Int32 = 0
    repeat {
      count = events.withUnsafeMutableBufferPointer { nearby_epoll_wait(epoll, $0.baseAddress, Int32($0.count), 0) }
      // A thread that wants this CPU (a task of Swift's pool that consumes our events, say)
      // gets it: polling only uses time that would otherwise be idle.
      if count == 0 { sched_yield() }
    } while count == 0 && Self.monotonicNanoseconds() < deadline
    return max(0, count)
  }

  package static func monotonicNanoseconds() -> UInt64 {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
  }

  // MARK: The loop

  private func run() {
    threadID.store(UInt64(pthread_self()), ordering: .releasing)
    _ = nearby_set_thread_name(String(name.utf8.prefix(15))!)
    var events = [nearby_epoll_event](repeating: nearby_epoll_event(), count: 256)
    var pollUntil: UInt64 = 0
    while true {
      let timeout: Int32 = shared.withLock({ !$0.work.isEmpty }) ? 0 : -1
      var count: Int32 = 0
      // With busy polling on, the time from having nothing to do until the next event.
      var idleSince: UInt64 = 0
      if timeout != 0, pollPolicy.window > 0 { idleSince = Self.monotonicNanoseconds() }
      if timeout != 0, pollUntil != 0 {
        count = poll(until: pollUntil, into: &events)
        pollUntil = 0
      }
      if count == 0 {
        count = events.withUnsafeMutableBufferPointer { buffer in
          nearby_epoll_wait(epoll, buffer.baseAddress, Int32(buffer.count), timeout)
        }
      }
      if count > 0, pollPolicy.window > 0 {
        let now = Self.monotonicNanoseconds()
        if idleSince != 0 { pollPolicy.noteWait(nanoseconds: now - idleSince) }
        if pollPolicy.pollsAfterActivity { pollUntil = now + pollPolicy.window }
      }
      if count < 0 && errno != EINTR {
        preconditionFailure("epoll_wait failed: \(SystemError("epoll_wait", errno: errno))")
      }
      iteration &+= 1
      var timerFired = false
      for index in 0..<max(0, Int(count)) {
        let fd = Int32(bitPattern: UInt32(truncatingIfNeeded: events[index].data))
        if fd == wakeFD {
          _ = nearby_eventfd_drain(wakeFD)
          continue
        }
        if fd == timerFD {
          _ = nearby_eventfd_drain(timerFD)
          timerFired = true
          continue
        }
        // A handler may have deregistered another fd earlier in this batch.
        handlers[fd]?.handle(events: events[index].events)
      }
      if timerFired { runTimers() }
      let stop = runQueuedWork()
      runDeferred()
      if stop, shared.withLock({ $0.work.isEmpty }) { break }
    }
    handlers.removeAll()
    timers.removeAll()
    deferred.removeAll()
    let continuation = finished.withLock { stored -> CheckedContinuation<Void, Never>? in
      hasFinished.store(true, ordering: .releasing)
      defer { stored = nil }
      return stored
    }
    continuation?.resume()
  }

  private func runDeferred() {
    while !deferred.isEmpty {
      // The work may defer more: it goes to the emptied array, for the next round.
      swap(&deferred, &runningDeferred)
      for item in runningDeferred {
        switch item {
        case .closure(let work): work()
        case .flush(let connection): connection.flush()
        }
      }
      runningDeferred.removeAll(keepingCapacity: runningDeferred.capacity <= 1024)
    }
  }

  /// Runs the timers that are due and arms the descriptor for the next deadline.
  private func runTimers() {
    armedDeadline = 0
    if !timers.isEmpty {
      let now = Self.monotonicNanoseconds()
      let due = timers.filter { $0.deadline <= now }
      if !due.isEmpty {
        timers.removeAll { $0.deadline <= now }
        for timer in due.sorted(by: { $0.deadline < $1.deadline }) { timer.work() }
      }
    }
    // What the timers' work scheduled armed the descriptor for its own deadline, which may
    // be later than a timer that was already waiting: the earliest one is what counts.
    // (Arming only when nothing was armed left such a timer to fire with the later one: an
    // acknowledgement due in a millisecond waited for the next quarter-second tick.)
    if let next = timers.map(\.deadline).min(), armedDeadline == 0 || next < armedDeadline { arm(next) }
  }

  /// Runs the work queued so far (what it queues in turn runs in the next iteration, after
  /// the descriptors are polled again: a task that keeps re-enqueueing itself cannot starve
  /// the sockets). - Returns: whether the loop should stop.
  private func runQueuedWork() -> Bool {
    signalled.store(false, ordering: .releasing)
    let stopping = shared.withLock { state in
      swap(&state.work, &running)
      return state.stopping
    }
    for item in running {
      switch item {
      case .closure(let work): work()
      case .actorJob(let job): job.runSynchronously(on: asUnownedSerialExecutor())
      case .taskJob(let job, let executor): job.runSynchronously(on: executor)
      }
    }
    running.removeAll(keepingCapacity: true)
    return stopping
  }
}

// MARK: An executor for actors and tasks

/// The loop is the serial executor of the session actor and a task executor: a task that
/// prefers it (`withTaskExecutorPreference`) runs its nonisolated code on the loop thread, so
/// events handed to it and messages it sends need no thread switch.
extension EventLoop: SerialExecutor {
  /// Runs a job of an actor on the loop thread. Once the loop has stopped, jobs run on a
  /// serial queue instead, after the loop thread has ended, so an actor on this executor
  /// still finishes what it was doing.
  package func enqueue(_ job: consuming ExecutorJob) {
    let job = UnownedJob(job)
    if !submit(.actorJob(job)) {
      afterStop.async { [self] in
        waitUntilFinished()
        job.runSynchronously(on: asUnownedSerialExecutor())
      }
    }
  }

  /// Queues a job of a task that prefers ``taskExecutor``.
  func enqueueTaskJob(_ job: UnownedJob, executor: UnownedTaskExecutor) {
    if !submit(.taskJob(job, executor)) {
      afterStop.async { [self] in
        waitUntilFinished()
        job.runSynchronously(on: executor)
      }
    }
  }

  package func asUnownedSerialExecutor() -> UnownedSerialExecutor {
    UnownedSerialExecutor(ordinary: self)
  }

  package func checkIsolated() {
    precondition(inLoop || DispatchQueue.getSpecific(key: Self.afterStopKey) == token, "not on the event loop \(name)")
  }

  /// Whether the caller may use state confined to this loop (the loop thread, or the
  /// serial queue that replaces it after it stopped).
  package var isCurrent: Bool {
    inLoop || DispatchQueue.getSpecific(key: Self.afterStopKey) == token
  }

  private func waitUntilFinished() {
    while !hasFinished.load(ordering: .acquiring) { usleep(100) }
  }
}

/// An ``EventLoop`` as a task executor: a task that prefers it
/// (`withTaskExecutorPreference`) runs its nonisolated code on the loop thread. Its jobs run
/// as task jobs (not as jobs of the actor the loop is the serial executor of), so such a
/// task calls nonisolated async functions without switching executors.
package final class EventLoopTaskExecutor: TaskExecutor {
  package let loop: EventLoop

  package init(_ loop: EventLoop) { self.loop = loop }

  package func enqueue(_ job: consuming ExecutorJob) {
    loop.enqueueTaskJob(UnownedJob(job), executor: asUnownedTaskExecutor())
  }
}
