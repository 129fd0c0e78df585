import Foundation
import NearbyTestSupport
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// A chat that runs all day must not grow with each message it sends or receives: two
/// `nearby chat --json` processes exchange rounds of messages, and each one's resident
/// memory after the later rounds stays where it was after the first. (Until this test, the
/// chat kept every finished wait for a delivery report, about 2 KiB per message sent: 8 MB
/// more after each round of 2,000 messages each way.)
@Suite("A chat's memory over many messages", .enabled(if: LAN.avahiAvailable, "needs scripts/lan loopback"))
struct ChatMemoryTests {
  static func residentKiB(_ pid: pid_t) -> Int {
    let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
    let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") } ?? ""
    return Int(line.split(separator: " ").dropFirst().first ?? "") ?? -1
  }

  @Test func thousandsOfMessagesEachWayDoNotGrowEitherChat() async throws {
    let service = LAN.uniqueServiceType().name
    let alice = try ChatCLITests.chat("alice", service, ["--accept", "all"])
    let port = try await alice.expect("ready")["port"] as! Int
    let bob = try ChatCLITests.chat("bob", service, ["--connect", "127.0.0.1:\(port)"])
    try await bob.expect("connected")
    try await alice.expect("connected")
    let perRound = 1500
    var samples: [(alice: Int, bob: Int)] = []
    for round in 0..<4 {
      for index in 0..<perRound {
        bob.send("bob \(round) \(index)")
        alice.send("alice \(round) \(index)")
      }
      let last = perRound - 1
      try await alice.expect("message", within: .seconds(120)) { $0["text"] as? String == "bob \(round) \(last)" }
      try await bob.expect("message", within: .seconds(120)) { $0["text"] as? String == "alice \(round) \(last)" }
      // The last delivery reports settle the senders' waits.
      try await Task.sleep(for: .milliseconds(500))
      samples.append((Self.residentKiB(alice.child.pid), Self.residentKiB(bob.child.pid)))
    }
    print("chat memory: resident KiB after each round of \(perRound) messages each way: alice \(samples.map(\.alice)), bob \(samples.map(\.bob))")
    for (name, first, final) in [("alice", samples[1].alice, samples[3].alice), ("bob", samples[1].bob, samples[3].bob)] {
      #expect(first > 0 && final > 0, "\(name)'s memory could not be read")
      // 3,000 messages each way between the samples: before the fix that was 6 MB or more.
      #expect(final - first < 2048, "\(name) grew from \(first) to \(final) KiB over \(2 * perRound) messages each way")
    }
    alice.send("/quit")
    bob.send("/quit")
    #expect(await alice.wait() == 0)
    #expect(await bob.wait() == 0)
  }
}
