import Foundation
import NearbyCore
import NearbyTestSupport
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// `nearby chat --plain` reading its input: a line longer than the chat takes is refused
/// whole, with the reason, and the chat goes on. (It was cut at 1 MiB, the largest message,
/// and the part sent as if it were the message.)
@Suite(.enabled(if: LAN.avahiAvailable && NearbyBinary.isBuilt, "needs scripts/lan loopback and a built nearby"))
struct LineModeInputTests {
  @Test func aLineLongerThanTheChatTakesIsRefusedWholeAndTheChatGoesOn() async throws {
    let directory = try TemporaryDirectory()
    let service = LAN.uniqueServiceType()
    let alice = try LineModePeer(name: "alice", service: service.name, stateDirectory: directory.path + "/alice")
    defer { alice.process.terminate(SIGKILL) }
    try await alice.waitForLine(containing: "* ready")
    let long = String(repeating: "x", count: 3 << 20)
    alice.send(long)
    let error = try await alice.waitForLine(containing: "longer than the chat takes")
    #expect(error.contains("\(long.utf8.count) bytes"), "\(error)")
    #expect(error.contains("nothing was sent"))
    alice.send("/help")
    try await alice.waitForLine(containing: "/quit")
    #expect(await alice.finish() == 0)
    #expect(!alice.output.all.contains { $0.contains("sent") && !$0.contains("nothing was sent") }, "\(alice.output.all.suffix(5))")
  }
}
