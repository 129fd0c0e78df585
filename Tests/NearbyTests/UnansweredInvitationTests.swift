import Glibc
import Nearby
import NearbyCore
import NearbyLab
import NearbyTestSupport
import Testing

/// Inviting an address whose connection ends before the handshake names a peer: the
/// inviter hears why, once. Before, nothing was reported at all, and `nearby chat --connect`
/// to such an address waited for ever.
@Suite("Invitations by address that nobody answers")
struct UnansweredInvitationTests {
  /// A TCP listener on loopback that never accepts and never says anything (the kernel
  /// completes connections in its backlog: nobody reads them).
  final class SilentListener: Sendable {
    let fd: Int32
    let port: UInt16

    init() throws { (fd, port) = try LoopbackSocket.listening() }

    deinit { close(fd) }
  }

  static func connectFailures(_ session: RunningSession) -> [String] {
    session.events.all.compactMap { if case .error(.connectFailed(nil, let detail)) = $0 { detail } else { nil } }
  }

  @Test func anAddressThatAcceptsAndNeverAnswersIsReportedWhenTheHandshakeTimesOut() async throws {
    let silent = try SilentListener()
    let alice = try await RunningSession.start("alice") { $0.timeouts.handshake = .seconds(1) }
    await alice.session.invite(endpoints: [Endpoint(host: "127.0.0.1", port: silent.port)])
    let detail = try await alice.expect("the failure", within: .seconds(20)) { if case .error(.connectFailed(nil, let d)) = $0 { d } else { nil } }
    #expect(detail.contains("127.0.0.1:\(silent.port)"), "names the address: \(detail)")
    #expect(detail.contains("did not complete the handshake within 1.00 s"), "names the cause: \(detail)")
    #expect(detail.contains("is a Nearby peer listening there?"), "says what to check: \(detail)")
    try await Task.sleep(for: .seconds(1))
    #expect(Self.connectFailures(alice).isEmpty, "reported once")
    try await alice.stop()
  }

  /// A refusal inside the handshake (ERROR busy) was reported already, as a failed
  /// authentication that names the error: it is not reported twice.
  @Test func aPeerTooBusyForOneMoreConnectionIsReportedOnceWithItsError() async throws {
    // Bob takes one connection being set up per host; one that never finishes holds it.
    let bob = try await RunningSession.start("bob") { $0.maximumPendingConnectionsPerSource = 1 }
    let holder = try LoopbackSocket.connected(to: bob.port)
    defer { close(holder) }
    try await Task.sleep(for: .milliseconds(200))
    let alice = try await RunningSession.start("alice")
    await alice.session.invite(endpoints: [bob.endpoint])
    let error = try await alice.expect("the failure", within: .seconds(20)) { if case .error(let e) = $0 { e } else { nil } }
    #expect("\(error)".contains("ERROR busy"), "names the cause: \(error)")
    try await Task.sleep(for: .seconds(1))
    let errors = alice.events.all.filter { if case .error = $0 { true } else { false } }
    #expect(errors.isEmpty, "reported once: \(errors)")
    #expect(!alice.events.all.contains { if case .connected = $0 { true } else { false } })
    try await alice.stop()
    try await bob.stop()
  }
}
