/// Lets the event hub (which exists before the session) reach the session once it exists.
final class ClaimsSettledSignal: @unchecked Sendable {
  /// Holds the session weakly, for ``acknowledge`` to reach it with one weak load.
  final class Target: @unchecked Sendable {
    /// Set once, at the end of the session's `init`, before anything can settle a claim (no
    /// other thread has the session, or its hub's events, before `init` returns): read
    /// without a lock, which was two lock operations per message, and without the runtime's
    /// exclusivity check (about 75 instructions a message).
    @exclusivity(unchecked) weak var session: NearbySession?
  }

  let target = Target()
  /// What the loop runs to acknowledge: one closure for the session's life, handed to the
  /// loop each time claims settle. It holds the session weakly, through ``target``: the loop
  /// may run it after the session and its hub are gone (`unowned` crashed there: "Attempted
  /// to read an unowned reference but object … was already destroyed"). Capturing the target
  /// rather than the signal weakly saves a weak load and a release a message.
  let acknowledge: @Sendable () -> Void

  init() {
    acknowledge = { [target] in target.session?.acknowledgeTakenOnLoop() }
  }

  /// The session, once it exists.
  var session: NearbySession? {
    get { target.session }
    set { target.session = newValue }
  }

  func fire() { target.session?.scheduleAcknowledgements(acknowledge) }
}
