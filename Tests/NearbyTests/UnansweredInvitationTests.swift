import Glibc
import Nearby
import NearbyCore
import NearbyTestSupport
import Testing

/// Inviting an address whose connection ends before the handshake names a peer: the
/// inviter hears why, once. Before, nothing was reported at all, and `nearby chat --connect`
/// to such an address waited for ever.
@Suite("Invitations by address that nobody answers")
struct UnansweredInvitationTests {
  /// A TCP listener on loopback that accepts and never says anything.
  final class SilentListener: Sendable {
    let fd: Int32
    let port: UInt16

    init() {
      let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
      var address = sockaddr_in()
      address.sin_family = sa_family_t(AF_INET)
      address.sin_addr.s_addr = inet_addr("127.0.0.1")
      var length = socklen_t(MemoryLayout<sockaddr_in>.size)
      withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
          _ = bind(fd, $0, length)
          _ = getsockname(fd, $0, &length)
        }
      }
      listen(fd, 16)  // the kernel completes connections in the backlog: nobody reads them
      self.fd = fd
      port = UInt16(bigEndian: address.sin_port)
    }

    deinit { close(fd) }
  }

  static func connectFailures(_ session: RunningSession) -> [String] {
    session.events.all.compactMap { if case .error(.connectFailed(nil, let detail)) = $0 { detail } else { nil } }
  }

  @Test func anAddressThatAcceptsAndNeverAnswersIsReportedWhenTheHandshakeTimesOut() async throws {
    let silent = SilentListener()
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
    let holder = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(holder) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = bob.port.bigEndian
    let connected = withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(holder, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    #expect(connected == 0)
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
