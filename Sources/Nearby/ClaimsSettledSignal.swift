/// Lets the event hub (which exists before the session) reach the session once it exists.
final class ClaimsSettledSignal: @unchecked Sendable {
  /// Set once, at the end of the session's `init`, before anything can settle a claim (no
  /// other thread has the session, or its hub's events, before `init` returns): read
  /// without a lock, which was two lock operations per message.
  weak var session: NearbySession?
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
