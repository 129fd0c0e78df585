import Nearby
import NearbyScript
import Testing

/// `repeat COUNT STEP`, `expect next` and `expect no`: what the fault scenarios use to check
/// that a thousand messages arrive once each and in order.
@Suite("Scripts: repeat, expect next, expect no")
struct ScriptRepeatTests {
  @Test func repeatMakesCountStepsWithTheirNumber() throws {
    let script = try ChatScript.parse("repeat 3 say m{n}  # three\nrepeat 2 expect next message from bob \"r{n}\" within 2s\n")
    #expect(
      script.steps.map(\.action) == [
        .chat("m1"), .chat("m2"), .chat("m3"),
        .expect(ScriptExpectation(event: .message, peer: "bob", text: .exact("r1"), timeout: .seconds(2), mode: .next)),
        .expect(ScriptExpectation(event: .message, peer: "bob", text: .exact("r2"), timeout: .seconds(2), mode: .next)),
      ])
    #expect(script.steps.map(\.line) == [1, 1, 1, 2, 2])
    #expect(script.steps[2].repetition == ChatScript.Repetition(index: 3, count: 3))
    #expect(script.steps[1].source == "say m2")
  }

  @Test func badRepeatsAreReportedWithTheirColumn() {
    for (text, column, message) in [
      ("repeat x say hi", 8, "bad count 'x'"), ("repeat 0 say hi", 8, "bad count '0'"), ("repeat", 7, "repeat needs a count"),
      ("repeat 5", 9, "repeat needs a step to repeat"), ("repeat 2 quit", 10, "quit cannot be repeated"),
      ("repeat 2 sya hi", 10, "unknown command 'sya'"), ("repeat 2 expect no", 19, "expect no needs an event"),
    ] {
      do {
        _ = try ChatScript.parse(text)
        Issue.record("\(text) parsed")
      } catch {
        #expect(error.errors.first?.column == column && error.errors.first?.message == message, "\(text): \(error.errors)")
      }
    }
  }

  @Test func expectNextFailsWhenAnotherEventComesFirst() async throws {
    let run = try ScriptRun(
      "expect next message from bob \"m1\"\nexpect next message from bob \"m2\"\n",
      before: { log in
        log.record(ScriptFixtures.message(from: ScriptFixtures.alice, "not bob's"))
        log.record(ScriptFixtures.message(from: ScriptFixtures.bob, "m1"))
        log.record(ScriptFixtures.message(from: ScriptFixtures.bob, "m1"))
        log.record(ScriptFixtures.message(from: ScriptFixtures.bob, "m2"))
      })
    let failure = try #require(await run.result)
    #expect(failure.step.line == 2)
    #expect(failure.reason == .unwanted(ScriptFixtures.message(from: ScriptFixtures.bob, "m1")))
    #expect(failure.formatted(file: "b.script").contains("hint: expect next checks order"))
  }

  @Test func expectNoWaitsItsTimeAndFailsOnAForbiddenEvent() async throws {
    let quiet = try ScriptRun("expect no message from bob within 1s\n")
    try await quiet.clock.waitForSleepers()
    quiet.clock.advance(by: .seconds(1))
    #expect(await quiet.result == nil)

    let noisy = try ScriptRun("expect no error within 1s\n")
    try await noisy.clock.waitForSleepers()
    noisy.log.record(ScriptEvent(kind: .error, text: "message 7 to bob not delivered"))
    let failure = try #require(await noisy.result)
    #expect(failure.formatted(file: "a.script").contains("an event it forbids arrived: message 7 to bob not delivered"))
  }
}
