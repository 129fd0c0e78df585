import NearbyLab
import NearbyScript
import Testing

@Suite("Faults: the faults file's grammar")
struct FaultScriptTests {
  @Test func triggersAndActions() throws {
    let script = try FaultScript.parse(
      """
      # a scenario
      at 5s partition alice bob            # cut
      AT 8.5s heal
      when alice prints /connected to (bob|carol)/i loss bob 50%
      when bob prints "hello # not a comment" after 1s kill bob
      at 1m restart bob

      at 500ms heal alice,carol bob
      at 1s link r down 2
      at 1s link r up
      at 1s rate r 1mbit
      at 1s rate r off
      at 1s avahi r restart
      at 1s pause alice
      at 1s resume alice
      """)
    #expect(script.steps.map(\.line) == [2, 3, 4, 5, 6, 8, 9, 10, 11, 12, 13, 14, 15])
    #expect(
      script.steps.map(\.action) == [
        .partition(["alice"], ["bob"]), .healAll, .loss(host: "bob", percent: 50), .kill("bob"), .restart("bob"), .heal(["alice", "carol"], ["bob"]),
        .link(host: "r", up: false, segment: 2), .link(host: "r", up: true, segment: nil), .rate(host: "r", rate: FaultAction.Rate("1mbit")),
        .rate(host: "r", rate: nil), .avahi(host: "r", .restart), .pause("alice"), .resume("alice"),
      ])
    #expect(script.steps[0].trigger == .at(.seconds(5)))
    #expect(script.steps[1].trigger == .at(.milliseconds(8500)))
    #expect(script.steps[2].trigger == .output(host: "alice", pattern: .regex("connected to (bob|carol)", ignoresCase: true), delay: .zero))
    #expect(script.steps[3].trigger == .output(host: "bob", pattern: .text("hello # not a comment"), delay: .seconds(1)))
    #expect(script.steps[4].trigger == .at(.seconds(60)))
  }

  @Test(arguments: [
    "loss bob 10%", "partition a,b c", "heal a b", "heal", "link r down 2", "link r up", "rate r 500kbit", "rate r off", "avahi r kill", "pause a",
    "resume a", "kill a", "restart a",
  ])
  func actionsReadBackAsWritten(action: String) throws {
    #expect(try FaultScript.parse("at 1s \(action)").steps[0].action.description == action)
  }

  @Test(arguments: [
    ("at 5 heal", 1, 4, "bad duration '5': it has no unit", "write a number and a unit"),
    ("at soon heal", 1, 4, "bad duration 'soon'", "write a number and a unit"),
    ("at", 1, 3, "at needs a duration", "write a number and a unit"),
    ("partition a b", 1, 1, "partition needs a trigger in front", "write: at 5s partition ..."),
    ("sometimes heal", 1, 1, "unknown trigger 'sometimes'", "a fault line is: at DURATION FAULT"),
    ("at 1s partiton a b", 1, 7, "unknown fault 'partiton'", "did you mean 'partition'?"),
    ("at 1s explode a", 1, 7, "unknown fault 'explode'", "the faults are loss, partition, heal"),
    ("at 1s", 1, 6, "a trigger needs a fault after it", "the faults are"),
    ("at 1s partition a a", 1, 7, "a is on both sides", "usage: partition"),
    ("at 1s partition a", 1, 18, "partition needs hosts on both sides", "usage: partition"),
    ("at 1s loss a 10", 1, 14, "bad loss '10'", "whole percentage"),
    ("at 1s loss a 101%", 1, 14, "bad loss '101%'", "whole percentage"),
    ("at 1s loss a-b 10%", 1, 12, "bad host name 'a-b'", "1-24 letters and digits"),
    ("at 1s rate a 1mbps", 1, 14, "bad rate '1mbps'", "kbit, mbit or gbit"),
    ("at 1s link a sideways", 1, 14, "link a sideways: expected down or up", "usage: link"),
    ("at 1s link a down 0", 1, 19, "bad segment number '0'", "segments count from 1"),
    ("at 1s avahi a status", 1, 15, "avahi a status: expected restart, stop, start or kill", "usage: avahi"),
    ("at 1s kill a now", 1, 14, "unexpected 'now' after kill", "usage: kill HOST"),
    ("when", 1, 5, "when needs a host (1-24 letters and digits)", "a fault line is"),
    ("when a says /x/ kill b", 1, 8, "expected 'prints' after when a", "a fault line is"),
    ("when a prints hello kill b", 1, 15, "when a prints needs \"TEXT\" or /REGEX/ to look for", "a fault line is"),
    ("when a prints /(x/ kill b", 1, 15, "bad regex /(x/: expected ')'", "use Swift Regex syntax"),
    ("when a prints /x/q kill b", 1, 18, "unknown regex flag 'q'", "the only flag is i"),
    ("when a prints \"x kill b", 1, 15, "unterminated string: no closing quote", "end the text with a \""),
    ("when a prints /x/ after soon kill b", 1, 25, "bad duration 'soon'", "write a number and a unit"),
  ])
  func errors(text: String, line: Int, column: Int, message: String, hint: String) {
    do throws(ChatScriptErrors) {
      _ = try FaultScript.parse("# first line\n\(text)")
      Issue.record("\(text) parsed")
    } catch {
      let error = error.errors[0]
      #expect(error.line == line + 1)
      #expect(error.column == column, "\(text)")
      #expect(error.message == message)
      #expect(error.hint.contains(hint), "\(error.hint)")
    }
  }

  @Test func everyBadLineIsReportedAtOnce() {
    let (script, errors) = FaultScript.read("at 1s heal\nat x heal\nat 2s kill\nat 3s kill a\n")
    #expect(script.steps.map(\.line) == [1, 4])
    #expect(errors.map(\.line) == [2, 3])
    #expect(
      ChatScriptErrors(errors: errors).formatted(file: "lab/faults").contains("lab/faults:2:4: bad duration 'x'\n    at x heal\n       ^\n  hint:"))
  }

  @Test func whatDoesNotFitTheLab() throws {
    let segments = LabPlan(
      network: .segments([["a", "r"], ["r", "c"]]),
      hosts: [.init(name: "a", role: .script(path: "a.script")), .init(name: "r", role: .idle), .init(name: "c", role: .command(["true"]))],
      timeout: .seconds(60))
    let script = try FaultScript.parse(
      "at 1s loss z 5%\nwhen r prints /x/ heal\nat 1s pause r\nat 1s link a down 2\nat 1s link r down 2\nat 1s partition a c\nat 1s kill a\n")
    let problems = script.problems(in: segments)
    #expect(problems.map(\.line) == [1, 2, 3, 4])
    #expect(
      problems.map(\.message) == [
        "no host 'z' in this lab", "r runs nothing, so it prints nothing", "r runs nothing to pause", "a is not on segment 2",
      ])
    #expect(problems[0].column == 12 && problems[0].hint == "the hosts are a, r, c")
    var loopback = segments
    loopback.network = .loopback
    let onLoopback = try FaultScript.parse("at 1s partition a c\nat 1s avahi a restart\nat 1s kill a\nat 2s restart a\n").problems(in: loopback)
    #expect(onLoopback.map(\.line) == [1, 2])
    #expect(onLoopback[0].message == "partition needs hosts with networks of their own: with --loopback every host shares one")
  }

  @Test func patterns() {
    #expect(FaultPattern.text("connected to bob").matches("[12:00:01] * connected to bob (5e6f)"))
    #expect(!FaultPattern.text("Connected").matches("* connected to bob"))
    #expect(FaultPattern.regex("^\\* connected", ignoresCase: false).matches("* connected to bob"))
    #expect(FaultPattern.regex("CONNECTED", ignoresCase: true).matches("* connected to bob"))
    #expect(!FaultPattern.regex("CONNECTED", ignoresCase: false).matches("* connected to bob"))
  }

  @Test(arguments: [("1mbit", 1_000_000), ("500kbit", 500_000), ("2gbit", 2_000_000_000), ("8kbit", 8000)])
  func rates(text: String, bits: Int) {
    #expect(FaultAction.Rate(text)?.bitsPerSecond == bits)
    #expect(FaultAction.Rate(text)?.description == text)
  }

  @Test(arguments: ["1", "1mbps", "mbit", "1.5mbit", "-1mbit", "7kbit", "101gbit"])
  func badRates(text: String) {
    #expect(FaultAction.Rate(text) == nil)
  }
}
