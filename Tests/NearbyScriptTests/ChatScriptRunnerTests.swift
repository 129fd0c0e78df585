import Nearby
import NearbyChat
import NearbyScript
import Synchronization
import Testing

/// A chat that records the lines it gets and answers some of them at once (as LineChat
/// does with `! no peer called ...`).
final class FakeChat: ScriptableChat {
  private let state = Mutex<(lines: [String], finished: Bool)>(([], false))
  let log: ScriptEventLog
  let answers: @Sendable (String) -> [ScriptEvent]

  init(log: ScriptEventLog, answers: @escaping @Sendable (String) -> [ScriptEvent] = { _ in [] }) {
    self.log = log
    self.answers = answers
  }

  var lines: [String] { state.withLock { $0.lines } }
  var finished: Bool { state.withLock { $0.finished } }

  func perform(_ line: String) async {
    state.withLock { $0.lines.append(line) }
    for event in answers(line) { log.record(event) }
  }

  func finish() async { state.withLock { $0.finished = true } }
}

/// A script running in a task of its own against a fake chat, on a manual clock.
struct ScriptRun {
  let log = ScriptEventLog()
  let clock = ManualClock()
  let chat: FakeChat
  let task: Task<ChatScriptFailure?, Never>

  init(_ text: String, answers: @escaping @Sendable (String) -> [ScriptEvent] = { _ in [] }, before: (ScriptEventLog) -> Void = { _ in }) throws {
    let script = try ChatScript.parse(text)
    let chat = FakeChat(log: log, answers: answers)
    self.chat = chat
    before(log)
    let runner = ChatScriptRunner(script: script, log: log, clock: clock)
    task = Task {
      do throws(ChatScriptFailure) {
        try await runner.run(chat)
        return nil
      } catch {
        return error
      }
    }
  }

  var result: ChatScriptFailure? { get async { await task.value } }
}

@Suite("Script runner: expectations and timeouts on an injected clock")
struct ChatScriptRunnerTests {
  @Test func eventsThatArrivedEarlierCountAndEachIsUsedOnce() async throws {
    let run = try ScriptRun(
      """
      expect message from bob
      expect message from bob
      """,
      before: { log in
        log.record(ScriptFixtures.message(from: ScriptFixtures.bob, "one"))
        log.record(ScriptFixtures.message(from: ScriptFixtures.alice, "not bob"))
      })
    try await run.clock.waitForSleepers()
    let entries = run.log.entries()
    #expect(entries.map(\.usedBy) == [1, nil], "the first waits on the second; alice's message does not match")
    run.log.record(ScriptFixtures.message(from: ScriptFixtures.bob, "two"))
    #expect(await run.result == nil)
    #expect(run.log.entries().map(\.usedBy) == [1, nil, 2])
    #expect(run.chat.finished, "the end of the script finishes the chat")
  }

  @Test func anExpectationTakesTheFirstUnusedMatchInOrder() async throws {
    let run = try ScriptRun(
      """
      expect message /./
      expect message "b"
      expect message "a2"
      """,
      before: { log in
        for text in ["a1", "b", "a2"] { log.record(ScriptFixtures.message(from: ScriptFixtures.bob, text)) }
      })
    #expect(await run.result == nil)
    #expect(run.log.entries().map(\.usedBy) == [1, 2, 3])
  }

  @Test func aTimeoutNamesTheLineTheExpectationTheTimeoutAndTheLastEvents() async throws {
    // The timeout runs on the injected clock: still waiting 1 ms before it (below), whatever
    // real time a loaded machine took meanwhile.
    let run = try ScriptRun(
      """
      # alice's side
      expect connected bob within 1s
      expect message from bob "hi alice" within 5s
      quit
      """,
      before: { log in
        log.record(ScriptEvent(kind: .connected, peers: [ScriptFixtures.bob], text: "* connected to Bob (5e6f7a8b)"))
        log.record(ScriptFixtures.message(from: ScriptFixtures.bob, "hello"))
      })
    try await run.clock.waitForSleepers()
    run.clock.advance(by: .milliseconds(4999))
    try await Task.sleep(for: .milliseconds(20))
    #expect(run.clock.sleeperCount == 1, "still waiting 1 ms before the timeout")
    run.clock.advance(by: .milliseconds(1))
    let failure = try #require(await run.result)
    #expect(failure.step.line == 3)
    #expect(failure.reason == .timeout(ScriptExpectation(event: .message, peer: "bob", text: .exact("hi alice"), timeout: .seconds(5))))
    #expect(!run.chat.finished, "a failed script does not finish the chat as a successful one")
    #expect(
      failure.formatted(file: "alice.script") == """
        alice.script:3: expect message from bob "hi alice" within 5s
          timed out: no matching event within 5s
          the last events seen (oldest first):
            * connected to Bob (5e6f7a8b)   [used by line 2]
            hello
          hint: a message event did arrive but did not match: its peer or the message text differs (hello)
        """)
  }

  @Test func anEventArrivingWhileWaitingIsTakenAtOnce() async throws {
    let run = try ScriptRun("expect delivered within 1m")
    try await run.clock.waitForSleepers()
    run.log.record(ScriptEvent(kind: .delivered, peers: [ScriptFixtures.bob], text: "* delivered #1 to Bob"))
    #expect(await run.result == nil)
    #expect(run.clock.sleeperCount == 0, "the timeout's sleep was cancelled")
  }

  @Test func sleepWaitsOnTheClock() async throws {
    let run = try ScriptRun(
      """
      say one
      sleep 2m
      say two
      """)
    try await run.clock.waitForSleepers()
    #expect(run.chat.lines == ["one"])
    run.clock.advance(by: .seconds(119))
    try await Task.sleep(for: .milliseconds(20))
    #expect(run.chat.lines == ["one"])
    run.clock.advance(by: .seconds(1))
    #expect(await run.result == nil)
    #expect(run.chat.lines == ["one", "two"])
  }

  @Test func quitEndsTheScriptAndFinishesTheChat() async throws {
    let run = try ScriptRun(
      """
      invite bob hi
      /who
      quit
      """)
    #expect(await run.result == nil)
    #expect(run.chat.lines == ["/invite bob hi", "/who"])
    #expect(run.chat.finished)
  }

  @Test func aRefusedCommandFailsTheScriptWithAHint() async throws {
    let run = try ScriptRun(
      """
      invite bob lunch?
      say never sent
      """,
      answers: { line in
        line.hasPrefix("/invite")
          ? [ScriptEvent(kind: .error, text: "no peer called 'bob'", display: "! no peer called 'bob'", isCommandError: true)] : []
      })
    let failure = try #require(await run.result)
    #expect(failure.step.line == 1)
    #expect(failure.reason == .refused("no peer called 'bob'"))
    #expect(run.chat.lines == ["/invite bob lunch?"])
    #expect(failure.formatted(file: "a").contains("hint: a peer must be found before a command names it: put 'expect found bob' before this line"))
  }

  @Test func aRefusalIsFineWhenTheNextStepExpectsIt() async throws {
    let run = try ScriptRun(
      """
      accept zed
      expect error /no pending invitation called 'zed'/ within 1s
      """,
      answers: { _ in [ScriptEvent(kind: .error, text: "no pending invitation called 'zed'", isCommandError: true)] })
    #expect(await run.result == nil)
    #expect(run.log.entries().map(\.usedBy) == [2])
  }

  @Test func cancellationStopsAWaitingScript() async throws {
    let run = try ScriptRun("expect found carol within 1m")
    try await run.clock.waitForSleepers()
    run.task.cancel()
    let failure = try #require(await run.result)
    #expect(failure.reason == .interrupted)
    #expect(failure.formatted(file: "s").contains("the chat ended before this step completed"))
  }

  @Test func theLogIsBoundedAndForgetsUsedEventsFirst() {
    let log = ScriptEventLog(limit: 100)
    for index in 0..<60 { log.record(ScriptFixtures.message(from: ScriptFixtures.bob, "old \(index)")) }
    #expect(log.take(ScriptExpectation(event: .message, text: .exact("old 0")), line: 1) != nil)
    for index in 0..<200 { log.record(ScriptFixtures.message(from: ScriptFixtures.bob, "new \(index)")) }
    #expect(log.count == 260, "sequence numbers keep counting")
    #expect(log.entries().count <= 100)
    #expect(!log.entries().contains { $0.usedBy != nil && $0.sequence < 250 }, "used entries go first")
    #expect(log.forgottenUnused > 0)
    #expect(log.entries().last?.event.text == "new 199")
    #expect(log.take(ScriptExpectation(event: .message, text: .exact("new 199")), line: 2) != nil)
    #expect(log.take(ScriptExpectation(event: .message, text: .exact("old 1")), line: 3) == nil, "the oldest unused were forgotten")
  }

  /// Long messages fill the log by their size before their number: 200 of 20 KiB (each
  /// kept twice, as text and as its line) in a log of 1 MiB.
  @Test func theLogIsBoundedInBytesToo() {
    let log = ScriptEventLog(limit: 10_000, byteLimit: 1 << 20)
    let long = String(repeating: "m", count: 20 << 10)
    for index in 0..<200 { log.record(ScriptFixtures.message(from: ScriptFixtures.bob, "\(index) \(long)")) }
    let kept = log.entries()
    let bytes = kept.reduce(0) { $0 + $1.event.text.utf8.count + $1.event.display.utf8.count }
    #expect(bytes <= 1 << 20, "\(kept.count) entries kept, \(bytes) bytes")
    #expect(kept.count >= ChatScriptFailure.recentCount)
    #expect(log.count == 200)
    #expect(log.forgottenUnused == 200 - kept.count)
    #expect(log.take(ScriptExpectation(event: .message, text: .exact("199 \(long)")), line: 1) != nil, "the newest are kept")
    #expect(log.take(ScriptExpectation(event: .message, text: .exact("0 \(long)")), line: 2) == nil, "the oldest unused were forgotten")
  }

  @Test func anExpectationWithoutWithinWaitsTenSeconds() async throws {
    let run = try ScriptRun("expect connected")
    try await run.clock.waitForSleepers()
    run.clock.advance(by: .milliseconds(9999))
    try await Task.sleep(for: .milliseconds(20))
    #expect(run.clock.sleeperCount == 1)
    run.clock.advance(by: .milliseconds(1))
    let failure = try #require(await run.result)
    #expect(failure.formatted(file: "s").contains("timed out: no matching event within 10s"))
    #expect(failure.formatted(file: "s").contains("no events were seen"))
  }
}
