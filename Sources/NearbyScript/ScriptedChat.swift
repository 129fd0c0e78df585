import Nearby
import NearbyChat
import NearbySystem
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// `nearby chat --script`: a ``LineChat`` driven by a ``ChatScript`` instead of a person.
///
/// The chat prints as in line mode (text or `--json`), and every line it shows is also
/// recorded for the script's expectations. Script progress is printed between the chat's
/// lines (`# 3: invite bob`, or `step` / `matched` JSON events).
public enum ScriptedChat {
  /// Runs the script to its end (or `quit`), then lets the chat finish as at end of input.
  /// - Parameters:
  ///   - file: the script's name for messages.
  /// - Returns: the exit code: 0 when the script completed; 1 when an expectation timed out,
  ///   a command was refused or the session failed (the reason is on `errors`); 128 + the
  ///   signal when SIGINT or SIGTERM stopped it.
  public static func run(
    script: ChatScript, file: String, session: NearbySession, json: Bool, connect: [Endpoint] = [], signals: AsyncStream<Int32>?,
    output: OutputWriter = .standardOutput, errors: OutputWriter = .standardError
  ) async -> Int32 {
    let log = ScriptEventLog()
    let chat = LineChat(session: session, output: ScriptOutput(base: PlainOutput(writer: output, json: json), log: log), connect: connect)
    let (input, inputContinuation) = AsyncStream.makeStream(of: String.self)
    let received = ReceivedSignal()
    let result = ScriptResult()
    let runner = ChatScriptRunner(script: script, log: log, clock: ContinuousClock()) { progress in
      if let line = render(progress, json: json) { output.line(line) }
    }
    var chatCode: Int32 = 0
    do {
      try await chat.runSession(
        input: input.map { @Sendable in ChatInput.line($0) }, signals: signals,
        alongside: [
          .init("script") {
            do throws(ChatScriptFailure) {
              try await runner.run(LineChatDriver(chat: chat, input: inputContinuation))
              result.set(nil)
            } catch {
              result.set(error)
              await chat.quit()
            }
          }
        ],
        onSignal: { signal in
          if signal == SIGINT || signal == SIGTERM {
            received.value.store(signal, ordering: .relaxed)
            await chat.quit()
          }
          return false
        })
    } catch {
      errors.line("nearby chat: \(error)")
      chatCode = 1
    }
    inputContinuation.finish()
    let scriptResult = result.value

    let signal = received.value.load(ordering: .relaxed)
    switch scriptResult {
    case .some(.none):
      return chatCode
    case .some(.some(let failure)) where failure.reason != .interrupted:
      if json { output.line(failedJSON(failure, file: file)) }
      errors.line("nearby chat: script failed: " + failure.formatted(file: file))
      return 1
    case .some(.some(let failure)):
      if json { output.line(failedJSON(failure, file: file)) }
      if signal != 0 {
        errors.line("nearby chat: script \(file) stopped by \(signal == SIGINT ? "SIGINT" : "SIGTERM") at line \(failure.step.line)")
        return 128 + signal
      }
      errors.line("nearby chat: script failed: " + failure.formatted(file: file))
      return chatCode != 0 ? chatCode : 1
    case .none:
      errors.line("nearby chat: the chat ended before the script \(file) completed")
      return chatCode != 0 ? chatCode : 1
    }
  }

  /// The line for a step's progress; nil for the steps a `repeat` made between its first
  /// and its last (a thousand of them would drown the chat's own lines).
  static func render(_ progress: ScriptProgress, json: Bool) -> String? {
    switch progress {
    case .started(let step), .matched(let step, _, _), .waited(let step, _):
      if let repetition = step.repetition, repetition.index != 1, repetition.index != repetition.count { return nil }
    case .passed:
      break
    }
    switch progress {
    case .started(let step):
      if json { return JSONValue.object([("event", .string("step")), ("line", .number(Int64(step.line))), ("step", .string(step.source))]).encoded }
      return "# \(step.line):\(repetition(step)) \(EventFormatter.sanitize(step.source))"
    case .matched(let step, _, let after):
      if json {
        return JSONValue.object([("event", .string("matched")), ("line", .number(Int64(step.line))), ("ms", .number(milliseconds(after)))]).encoded
      }
      return "# \(step.line):\(repetition(step)) matched after \(ScriptDuration.elapsed(after))"
    case .waited(let step, let after):
      if json {
        return JSONValue.object([("event", .string("matched")), ("line", .number(Int64(step.line))), ("ms", .number(milliseconds(after)))]).encoded
      }
      return "# \(step.line):\(repetition(step)) nothing came in \(ScriptDuration.elapsed(after))"
    case .passed(let steps, let after):
      if json {
        return JSONValue.object([("event", .string("passed")), ("steps", .number(Int64(steps))), ("ms", .number(milliseconds(after)))]).encoded
      }
      return "# script passed: \(steps) steps in \(ScriptDuration.elapsed(after))"
    }
  }

  /// ` [3/1000]` for a step a `repeat` made.
  private static func repetition(_ step: ChatScript.Step) -> String {
    step.repetition.map { " [\($0.index)/\($0.count)]" } ?? ""
  }

  static func failedJSON(_ failure: ChatScriptFailure, file: String) -> String {
    JSONValue.object([
      ("event", .string("failed")), ("line", .number(Int64(failure.step.line))), ("step", .string(failure.step.source)),
      ("message", .string(failure.formatted(file: file))),
    ]).encoded
  }

  static func milliseconds(_ duration: Duration) -> Int64 {
    duration.components.seconds * 1000 + duration.components.attoseconds / 1_000_000_000_000_000
  }
}

/// The last SIGINT or SIGTERM received (0: none).
private final class ReceivedSignal: Sendable {
  let value = Atomic<Int32>(0)
}

/// How the script ended: `.none` while it runs, `.some(nil)` when it completed, or its failure.
private final class ScriptResult: Sendable {
  private let state = Mutex<ChatScriptFailure??>(.none)
  func set(_ failure: ChatScriptFailure?) { state.withLock { $0 = .some(failure) } }
  var value: ChatScriptFailure?? { state.withLock { $0 } }
}

/// Prints chat lines through another output and records them for a script's expectations.
public struct ScriptOutput: ChatOutput {
  public let base: any ChatOutput
  public let log: ScriptEventLog

  public init(base: any ChatOutput, log: ScriptEventLog) {
    self.base = base
    self.log = log
  }

  public func show(_ line: ChatLine) {
    base.show(line)
    if let event = ScriptEvent(line) { log.record(event) }
  }

  public func waitForRoom() async { await base.waitForRoom() }
}

/// Feeds a script's commands to a ``LineChat`` one at a time, each handled before the next;
/// finishing ends its input, so the chat quits as at end of input.
struct LineChatDriver: ScriptableChat {
  let chat: LineChat
  let input: AsyncStream<String>.Continuation

  func perform(_ line: String) async { _ = await chat.handle(line: line) }

  func finish() async { input.finish() }
}

/// Reads a script file (`-`: standard input) off the cooperative pool.
public enum ChatScriptFile {
  /// - Throws: ``ChatScriptFileError`` when the file cannot be opened.
  public static func read(_ path: String) async throws(ChatScriptFileError) -> String {
    let fd = path == "-" ? 0 : open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { throw ChatScriptFileError(path: path, reason: String(cString: strerror(errno))) }
    defer { if fd != 0 { close(fd) } }
    var info = stat()
    if fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFDIR { throw ChatScriptFileError(path: path, reason: "it is a directory") }
    var lines: [String] = []
    var failure: ChatScriptFileError?
    // A line is taken whole or the script refused (a `say` cut short would send part of it).
    // Read to the end either way: the reading thread uses the descriptor until then.
    for await line in LineReader.checkedLines(fd: fd, maximumLineBytes: LineChat.maximumLineBytes) where failure == nil {
      switch line {
      case .success(let text): lines.append(text)
      case .failure(let tooLong):
        failure = ChatScriptFileError(
          path: path,
          reason: "line \(lines.count + 1) has \(tooLong.byteCount) bytes, more than a line may have (\(tooLong.limit)): split it into shorter lines")
      }
    }
    if let failure { throw failure }
    return lines.joined(separator: "\n")
  }
}

public struct ChatScriptFileError: Error, Sendable, CustomStringConvertible {
  public var path: String
  public var reason: String
  public var description: String { "cannot read the script \(path): \(reason)" }
}
