import NearbyChat

/// What a script drives: a chat that takes input lines.
public protocol ScriptableChat: Sendable {
  /// Handles one input line; returns once the chat has acted on it (answers to the line,
  /// like `! no peer called 'bob'`, are shown by then).
  func perform(_ line: String) async
  /// End of input: the chat quits once pending messages are delivered or failed.
  func finish() async
}

/// What a running script reports as it goes.
public enum ScriptProgress: Sendable {
  case started(ChatScript.Step)
  case matched(ChatScript.Step, ScriptEvent, after: Duration)
  /// An `expect no` saw nothing it forbids for its whole time.
  case waited(ChatScript.Step, after: Duration)
  case passed(steps: Int, after: Duration)
}

/// Runs a ``ChatScript`` against a chat: types its commands, waits for its expectations on
/// the events in a ``ScriptEventLog``, sleeps on an injected clock (tests use a manual one).
public struct ChatScriptRunner<C: Clock>: Sendable where C.Duration == Duration {
  public let script: ChatScript
  public let log: ScriptEventLog
  public let clock: C
  public let progress: @Sendable (ScriptProgress) -> Void

  public init(script: ChatScript, log: ScriptEventLog, clock: C, progress: @escaping @Sendable (ScriptProgress) -> Void = { _ in }) {
    self.script = script
    self.log = log
    self.clock = clock
    self.progress = progress
  }

  /// Runs every step; at the end (or at `quit`) asks the chat to finish.
  /// - Throws: ``ChatScriptFailure`` at the first expectation that times out or command the
  ///   chat refuses; the chat is then not finished (the caller decides how to stop it).
  public func run(_ chat: some ScriptableChat) async throws(ChatScriptFailure) {
    let started = clock.now
    for (index, step) in script.steps.enumerated() {
      progress(.started(step))
      switch step.action {
      case .chat(let line):
        let mark = log.count
        await chat.perform(line)
        try checkAnswer(to: step, from: mark, next: index + 1 < script.steps.count ? script.steps[index + 1] : nil)
      case .expect(let expectation) where expectation.mode == .none:
        let waitStarted = clock.now
        if let event = await log.expect(expectation, line: step.line, clock: clock) {
          throw ChatScriptFailure(step: step, reason: .unwanted(event), recent: recent())
        }
        if Task.isCancelled { throw ChatScriptFailure(step: step, reason: .interrupted, recent: recent()) }
        progress(.waited(step, after: waitStarted.duration(to: clock.now)))
      case .expect(let expectation):
        let waitStarted = clock.now
        let taking = expectation.mode == .next ? expectation.ignoringText : expectation
        guard let event = await log.expect(taking, line: step.line, clock: clock) else {
          throw ChatScriptFailure(step: step, reason: Task.isCancelled ? .interrupted : .timeout(expectation), recent: recent())
        }
        guard expectation.matches(event) else { throw ChatScriptFailure(step: step, reason: .unwanted(event), recent: recent()) }
        progress(.matched(step, event, after: waitStarted.duration(to: clock.now)))
      case .sleep(let duration):
        do {
          try await clock.sleep(for: duration)
        } catch {
          throw ChatScriptFailure(step: step, reason: .interrupted, recent: recent())
        }
      case .quit:
        break
      }
      if Task.isCancelled { throw ChatScriptFailure(step: step, reason: .interrupted, recent: recent()) }
      if step.action == .quit { break }
    }
    progress(.passed(steps: script.steps.count, after: started.duration(to: clock.now)))
    await chat.finish()
  }

  /// A command the chat answered with an error fails the script, unless the next step
  /// expects an error (then that step checks it).
  private func checkAnswer(to step: ChatScript.Step, from mark: Int, next: ChatScript.Step?) throws(ChatScriptFailure) {
    guard let refusal = log.entries(from: mark).first(where: \.event.isCommandError) else { return }
    if case .expect(let expectation) = next?.action, expectation.event == .error { return }
    log.markUsed(sequence: refusal.sequence, by: step.line)
    throw ChatScriptFailure(step: step, reason: .refused(refusal.event.text), recent: recent())
  }

  private func recent() -> [ScriptEventLog.Entry] { Array(log.entries().suffix(ChatScriptFailure.recentCount)) }
}

/// Why a script stopped before its end.
public struct ChatScriptFailure: Error, Sendable, CustomStringConvertible {
  public enum Reason: Sendable, Equatable {
    /// No matching event within the expectation's timeout.
    case timeout(ScriptExpectation)
    /// The chat answered the command with this error.
    case refused(String)
    /// The run was cancelled (the chat ended: a signal, or the session failed).
    case interrupted
    /// `expect next` found another event first, or `expect no` saw one it forbids.
    case unwanted(ScriptEvent)
  }

  /// How many of the last events a failure shows.
  public static let recentCount = 10

  public var step: ChatScript.Step
  public var reason: Reason
  /// The last events seen, oldest first.
  public var recent: [ScriptEventLog.Entry]

  public init(step: ChatScript.Step, reason: Reason, recent: [ScriptEventLog.Entry]) {
    self.step = step
    self.reason = reason
    self.recent = recent
  }

  public var description: String { formatted(file: "script") }

  /// `FILE:LINE: the step`, what went wrong, the last events seen, and a hint.
  public func formatted(file: String) -> String {
    var lines = ["\(file):\(step.line): \(step.source)"]
    var hint: String?
    switch reason {
    case .timeout(let expectation):
      lines.append("  timed out: no matching event within \(ScriptDuration.format(expectation.timeout))")
      hint = timeoutHint(expectation)
    case .refused(let answer):
      lines.append("  the chat refused the command: \(EventFormatter.sanitize(answer))")
      hint = refusalHint()
    case .interrupted:
      lines.append("  the chat ended before this step completed (a signal, or the session failed)")
    case .unwanted(let event):
      if case .expect(let expectation) = step.action, expectation.mode == .none {
        lines.append("  an event it forbids arrived: \(EventFormatter.sanitize(event.display))")
        hint = "something happened that should not have (a copy, an extra message, an error)"
      } else {
        lines.append("  the next such event was another one: \(EventFormatter.sanitize(event.display))")
        hint = "expect next checks order: the events came in another order, or one came twice"
      }
    }
    if recent.isEmpty {
      lines.append("  no events were seen")
    } else {
      lines.append("  the last events seen (oldest first):")
      for entry in recent {
        let used = entry.usedBy.map { "   [used by line \($0)]" } ?? ""
        for (index, row) in entry.event.display.split(separator: "\n").enumerated() {
          lines.append("    " + row + (index == 0 ? used : ""))
        }
      }
    }
    if let hint { lines.append("  hint: " + hint) }
    return lines.joined(separator: "\n")
  }

  private func timeoutHint(_ expectation: ScriptExpectation) -> String? {
    let sameKind = recent.filter { $0.event.kind == expectation.event }
    if let unused = sameKind.last(where: { $0.usedBy == nil }) {
      return "a \(expectation.event.rawValue) event did arrive but did not match: its peer or \(expectation.event.textMeaning) differs ("
        + "\(EventFormatter.sanitize(unused.event.text)))"
    }
    if let used = sameKind.last, let line = used.usedBy {
      return "the matching \(expectation.event.rawValue) event was already used by line \(line); each event satisfies one expect"
    }
    return "wait longer with 'within', or check that the other side does its part"
  }

  private func refusalHint() -> String? {
    guard case .chat(let line) = step.action else { return nil }
    switch ChatCommand.parse(line) {
    case .invite(let target, _), .message(let target, _):
      return "a peer must be found before a command names it: put 'expect found \(target)' before this line"
    case .accept(let target), .decline(let target):
      return "an invitation must arrive before you answer it: put 'expect invitation from \(target)' before this line"
    case .leave(let target):
      return "put 'expect connected \(target)' before this line"
    default:
      return "if the error is what you are testing, put 'expect error ...' right after this line"
    }
  }
}
