import Testing

@testable import NearbyLab

@Suite("Faults: when each step of a faults file runs")
struct FaultScheduleTests {
  @Test func timeStepsCountFromTheStartAndRunOnceInFileOrder() throws {
    let script = try FaultScript.parse("at 2s heal\nat 1s loss a 5%\nat 1s kill a\nat 1m restart a\n")
    let schedule = FaultSchedule(script.steps)
    let start = ContinuousClock.now
    #expect(schedule.due(at: start + .seconds(5)).isEmpty, "nothing before begin")
    schedule.begin(at: start)
    #expect(schedule.due(at: start + .milliseconds(999)).isEmpty)
    #expect(schedule.restartPending("a") && !schedule.restartPending("b"))
    #expect(schedule.due(at: start + .seconds(2)).map(\.step.line) == [1, 2, 3])
    #expect(schedule.due(at: start + .seconds(3)).isEmpty, "each step once")
    #expect(!schedule.isFinished)
    #expect(schedule.due(at: start + .seconds(60)).map(\.step.line) == [4])
    #expect(schedule.isFinished && !schedule.restartPending("a"))
  }

  @Test func outputStepsWaitForTheirHostsLine() throws {
    let script = try FaultScript.parse("when a prints /connected/ partition a b\nwhen b prints \"x\" after 2s heal\n")
    let schedule = FaultSchedule(script.steps)
    let start = ContinuousClock.now
    schedule.begin(at: start)
    schedule.observe(host: "b", line: "connected", at: start + .seconds(1))
    #expect(schedule.due(at: start + .seconds(1)).isEmpty, "only a's lines trigger line 1")
    schedule.observe(host: "a", line: "* connected to b", at: start + .seconds(1))
    schedule.observe(host: "b", line: "xyz", at: start + .seconds(1))
    schedule.observe(host: "b", line: "x again", at: start + .seconds(2))
    #expect(schedule.due(at: start + .seconds(1)) == [FaultSchedule.Due(step: script.steps[0], line: "* connected to b")])
    #expect(schedule.due(at: start + .milliseconds(2999)).isEmpty, "2 s after the first matching line")
    #expect(schedule.due(at: start + .seconds(3)) == [FaultSchedule.Due(step: script.steps[1], line: "xyz")])
    #expect(schedule.isFinished)
  }
}
