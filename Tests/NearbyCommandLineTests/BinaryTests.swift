import Foundation
import NearbyTestSupport
import Testing

/// The built `nearby` binary: help text (golden files), exit codes, where errors go.
@Suite("The nearby binary")
struct BinaryTests {
  static let goldenDirectory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Golden").path

  static let helpCases: [(String, [String])] = [
    ("nearby", ["--help"]), ("chat", ["chat", "--help"]), ("browse", ["help", "browse"]), ("relay", ["relay", "-h"]),
    ("bench", ["bench", "--help"]), ("lab", ["lab", "--help"]), ("peers", ["peers", "--help"]), ("send", ["send", "--help"]),
    ("receive", ["help", "receive"]),
  ]

  /// Runs the binary with a fixed width, separating stdout and stderr.
  static func nearby(_ arguments: [String]) async throws -> (status: Int32, stdout: String, stderr: String) {
    let out = Repository.temporaryDirectory("nearby-out")
    let (status, _) = try await run(
      ["/bin/sh", "-c", "COLUMNS=80 \"$0\" \"$@\" >\(out)/stdout 2>\(out)/stderr", Repository.nearby] + arguments, timeout: .seconds(20))
    let stdout = (try? String(contentsOfFile: out + "/stdout", encoding: .utf8)) ?? ""
    let stderr = (try? String(contentsOfFile: out + "/stderr", encoding: .utf8)) ?? ""
    return (status, stdout, stderr)
  }

  @Test("help text matches its golden file", arguments: helpCases.map(\.0))
  func golden(name: String) async throws {
    let arguments = Self.helpCases.first { $0.0 == name }!.1
    let (status, stdout, stderr) = try await Self.nearby(arguments)
    #expect(status == 0)
    #expect(stderr.isEmpty)
    let path = "\(Self.goldenDirectory)/\(name).txt"
    if ProcessInfo.processInfo.environment["NEARBY_UPDATE_GOLDEN"] == "1" {
      try stdout.write(toFile: path, atomically: true, encoding: .utf8)
    }
    let expected = try String(contentsOfFile: path, encoding: .utf8)
    #expect(stdout == expected, "help for \(name) changed: run NEARBY_UPDATE_GOLDEN=1 swift test --filter BinaryTests and review the diff")
  }

  /// `nearby peers` of a state directory nobody used says so, rather than only that it
  /// knows nobody.
  @Test func peersOfADirectoryThatDoesNotExistSaysSo() async throws {
    let missing = Repository.temporaryDirectory("nearby-peers") + "/never-used"
    let (status, stdout, _) = try await Self.nearby(["peers", "--state-dir", missing])
    #expect(status == 0)
    #expect(stdout.contains("\(missing) does not exist"), "\(stdout)")
  }

  @Test func versionGoesToStdoutWithExitZero() async throws {
    let (status, stdout, stderr) = try await Self.nearby(["--version"])
    #expect(status == 0)
    #expect(stdout.hasPrefix("nearby "))
    #expect(stderr.isEmpty)
  }

  @Test(
    "usage errors: Error and usage on stderr, exit 64",
    arguments: [
      ["chat", "--bogus"], ["browse", "--timeout"], ["frobnicate"], [], ["chat", "--service", "Bad_Type"], ["chat", "--name", ""],
      ["browse", "--timeout", "soon"], ["chat", "--connect", "somewhere"], ["chat", "--info", "id=1"], ["chat", "--allow", "xyz"],
      ["chat", "--name", "bo\u{202E}b"],
      ["relay", "--site", "hq"], ["relay", "--federate", "nats://10.0.0.5:4222"], ["relay", "--federate", "10.0.0.5:4222", "--site", "hq"],
      ["relay", "--federate", "nats://a:4222", "--site", "h q"], ["relay", "--federate", "nats://a:4222", "--site", "hq", "--queue-max-age", "7x"],
      ["relay", "--queue-max-bytes", "1G"],
    ])
  func usageErrors(arguments: [String]) async throws {
    let (status, stdout, stderr) = try await Self.nearby(arguments)
    #expect(status == 64)
    #expect(stdout.isEmpty)
    #expect(stderr.hasPrefix("Error: "), "\(stderr)")
    #expect(stderr.contains("Usage: nearby"))
    #expect(stderr.contains("--help' for more information"))
    #expect(!stderr.unicodeScalars.contains("\u{202E}"), "stderr quotes a hidden character raw")
  }

  /// NATS files that cannot work stop `nearby relay --federate` before it starts, with the
  /// option, the file and what to give (before this, the relay ran without federating and
  /// logged that it would try again).
  @Test(
    arguments: [
      (["--nats-tls-ca", "/nonexistent/ca.pem"], "--nats-tls-ca /nonexistent/ca.pem: No such file or directory; give the PEM file"),
      (["--nats-creds", "/nonexistent/user.creds"], "--nats-creds /nonexistent/user.creds: No such file or directory; give the .creds file"),
      (["--nats-tls-ca", "NOT-A-PEM"], "Error loading trusted certificates"),
    ])
  func unusableNATSFilesStopTheRelayAtOnce(options: [String], message: String) async throws {
    let state = Repository.temporaryDirectory()
    let garbage = state + "/garbage.pem"
    Array("not a certificate\n".utf8).withUnsafeBytes { bytes in
      let fd = open(garbage, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
      defer { close(fd) }
      _ = write(fd, bytes.baseAddress, bytes.count)
    }
    let arguments =
      ["relay", "--name", "r1", "--state-dir", state + "/relay", "--site", "hq", "--federate", "nats://127.0.0.1:4222"]
      + options.map { $0 == "NOT-A-PEM" ? garbage : $0 }
    let (status, stdout, stderr) = try await Self.nearby(arguments)
    #expect(status == 1)
    #expect(stdout.isEmpty)
    #expect(stderr.hasPrefix("Error: ") && stderr.contains(message), "\(stderr)")
  }

  @Test func aSecondProcessOnOneIdentityIsRefusedWithTheFix() async throws {
    let state = Repository.temporaryDirectory()
    let first = try PeerProcess("first", ["chat", "--name", "a", "--json", "--state-dir", state, "--port", "0"], environment: ["NEARBY_TEST": "1"])
    // The first holds the lock as soon as it prints anything (ready or a discovery error).
    _ = try? await first.expect("ready", within: .seconds(10))
    let (status, _, stderr) = try await Self.nearby(["chat", "--name", "b", "--state-dir", state])
    #expect(status == 1)
    #expect(stderr.contains("another nearby process"))
    #expect(stderr.contains("--state-dir"))
    await first.stop()
  }
}
