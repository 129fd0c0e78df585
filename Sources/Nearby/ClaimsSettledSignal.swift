import Synchronization

/// Lets the event hub (which exists before the session) reach the session once it exists.
final class ClaimsSettledSignal: @unchecked Sendable {
  private let lock = Mutex(())
  private weak var storedSession: NearbySession?
  var session: NearbySession? {
    get { lock.withLock { _ in storedSession } }
    set { lock.withLock { _ in storedSession = newValue } }
  }
  /// What the loop runs to acknowledge: one closure for the session's life, handed to the
  /// loop each time claims settle (set in `init`, only read afterwards). It holds the signal
  /// weakly: the loop may run it after the session and its hub are gone (`unowned` crashed
  /// there: "Attempted to read an unowned reference but object … was already destroyed").
  private(set) var acknowledge: @Sendable () -> Void = {}

  init() {
    acknowledge = { [weak self] in self?.session?.acknowledgeTakenOnLoop() }
  }

  func fire() { session?.scheduleAcknowledgements(acknowledge) }
}
