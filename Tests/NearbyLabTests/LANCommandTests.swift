import NearbyLab
import Testing

@Suite("Harness: the command line of nearby-lan (scripts/lan)")
struct LANCommandTests {
  @Test func commands() throws {
    #expect(try LANCommand.parse([]) == .help)
    #expect(try LANCommand.parse(["--help"]) == .help)
    #expect(try LANCommand.parse(["check"]) == .check(noAvahi: false))
    #expect(try LANCommand.parse(["check", "--no-avahi"]) == .check(noAvahi: true))
    #expect(try LANCommand.parse(["up", "t1", "a,r", "r,c"]) == .up(id: "t1", segments: ["a,r", "r,c"]))
    #expect(try LANCommand.parse(["addr", "t1", "r"]) == .address(id: "t1", host: "r", segment: nil))
    #expect(try LANCommand.parse(["addr", "t1", "r", "2"]) == .address(id: "t1", host: "r", segment: 2))
    #expect(try LANCommand.parse(["hostname", "t1", "a"]) == .hostName(id: "t1", host: "a"))
    #expect(try LANCommand.parse(["list"]) == .list)
    #expect(try LANCommand.parse(["down", "t1"]) == .down(id: "t1"))
    #expect(try LANCommand.parse(["selftest"]) == .selftest)
    #expect(try LANCommand.parse(["avahi", "t1", "a", "kill"]) == .avahi(.host(id: "t1", host: "a"), .kill))
    #expect(try LANCommand.parse(["avahi", "loopback", "status"]) == .avahi(.loopback, .status))
  }

  @Test func loopback() throws {
    var expected = LANCommand.Loopback()
    #expect(try LANCommand.parse(["loopback"]) == .loopback(expected))
    expected.command = ["swift", "test", "--filter", "x"]
    #expect(try LANCommand.parse(["loopback", "--", "swift", "test", "--filter", "x"]) == .loopback(expected))
    #expect(try LANCommand.parse(["loopback", "swift", "test", "--filter", "x"]) == .loopback(expected))
    expected.avahi = false
    expected.hostName = "h1"
    #expect(try LANCommand.parse(["loopback", "--no-avahi", "--host-name", "h1", "--", "swift", "test", "--filter", "x"]) == .loopback(expected))
    #expect(try LANCommand.parse(["loopback", "--host-name=h1", "--no-avahi", "swift", "test", "--filter", "x"]) == .loopback(expected))
  }

  @Test func exec() throws {
    #expect(
      try LANCommand.parse(["exec", "t1", "a", "--env", "A=1", "--env=B_2=x=y", "--", "sh", "-c", "echo --env"])
        == .exec(id: "t1", host: "a", environment: ["A=1", "B_2=x=y"], command: ["sh", "-c", "echo --env"]))
  }

  @Test(arguments: [
    (["check", "--x"], "usage: lan check [--no-avahi]"),
    (["up", "t1"], "usage: lan up ID SEGMENT [SEGMENT...]"),
    (["loopback", "--host-name"], "--host-name needs a value"),
    (["loopback", "--bogus"], "loopback: unknown option --bogus"),
    (["loopback", "--host-name", "-x", "true"], "bad --host-name '-x'"),
    (["exec", "t1"], "usage: lan exec ID HOST [--env K=V ...] -- CMD [ARGS...]"),
    (["exec", "t1", "a", "sh"], "lan exec: expected -- before the command (got 'sh')"),
    (["exec", "t1", "a", "--env", "1A=x", "--", "sh"], "bad --env '1A=x' (expected K=V)"),
    (["exec", "t1", "a", "--env"], "--env needs K=V"),
    (["exec", "t1", "a", "--"], "lan exec: no command"),
    (["avahi", "t1", "a", "reload"], "lan avahi: unknown action 'reload' (start|stop|restart|kill|status)"),
    (["avahi", "t1", "status"], "usage: lan avahi ID HOST start|stop|restart|kill|status (or: lan avahi loopback ACTION, inside lan loopback)"),
    (["addr", "t1", "a", "0"], "bad segment number '0': segments count from 1"),
    (["down"], "usage: lan down ID"),
    (["list", "x"], "usage: lan list"),
    (["frobnicate"], "unknown command 'frobnicate'"),
  ])
  func usageErrors(arguments: [String], message: String) {
    #expect(throws: LANError.usage(message)) { try LANCommand.parse(arguments) }
  }

  @Test func theHelpNamesEveryCommand() {
    for command in ["check", "loopback", "up", "exec", "avahi", "addr", "hostname", "list", "down", "selftest"] {
      #expect(LANUsage.text.contains("lan \(command)"), "\(command)")
    }
  }
}
