import Dispatch
import NearbyChat
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// The shell around ``TerminalChatModel``: it feeds the model keys (from the reader
/// thread), chat lines (as the ``ChatOutput`` of ``LineChat``), resizes, roster snapshots
/// and history read from disk, and carries out the effects. The model and the terminal
/// writes are under one lock, so output from different threads never interleaves and always
/// matches the state. Files are read and written on a queue of their own, in the order the
/// model asked: never on the cooperative pool, never under the lock.
final class TerminalChatController: ChatOutput, Sendable {
  private let model: Mutex<TerminalChatModel>
  let terminal: Terminal
  private let lines: AsyncStream<String>.Continuation
  private let historyFile: HistoryFile?
  private let logs: ConversationLogs?
  private let files = DispatchQueue(label: "nearby-chat-files")
  private let reportedFailure = Atomic<Bool>(false)

  /// - Parameters: `historyFile`, `logs`: nil with `--no-history` (nothing is read or kept).
  init(
    model: TerminalChatModel, terminal: Terminal, lines: AsyncStream<String>.Continuation, historyFile: HistoryFile?, logs: ConversationLogs?
  ) {
    self.model = Mutex(model)
    self.terminal = terminal
    self.lines = lines
    self.historyFile = historyFile
    self.logs = logs
  }

  func show(_ line: ChatLine) { send(.line(line)) }

  /// Bytes from the terminal. - Returns: whether an escape sequence waits for more.
  func receive(_ bytes: [UInt8]) -> Bool {
    send(.input(bytes))
    return model.withLock { $0.isWaitingForKeys }
  }

  /// The terminal is gone: leave like /quit.
  func endOfInput() { lines.yield("/quit") }

  func send(_ event: TerminalChatModel.Event) {
    let effects = model.withLock { model in
      let effects = model.update(event, now: Self.now())
      for case .write(let text) in effects { terminal.write(text) }
      return effects
    }
    for effect in effects {
      switch effect {
      case .write: break
      case .submit(let line): lines.yield(line)
      case .remember(let line):
        if let historyFile { files.async { historyFile.append(line) } }
      case .openLog(let id):
        guard let logs else { continue }
        files.async {
          do throws(PrivateDirectory.Failure) {
            self.send(.restored(id, try logs.records(id)))
          } catch {
            self.send(.restored(id, []))
            self.report(error)
          }
        }
      case .log(let id, let record):
        guard let logs else { continue }
        files.async {
          do throws(PrivateDirectory.Failure) {
            try logs.append(record, to: id)
          } catch {
            self.report(error)
          }
        }
      case .quit: lines.yield("/quit")
      case .forceQuit:
        send(.finish)
        terminal.restore()
        exit(130)
      case .suspend:
        terminal.suspend()
        send(.redraw)
        send(.resize(terminal.size()))
      }
    }
  }

  /// Says once that a history file cannot be used (the chat goes on without it).
  private func report(_ failure: PrivateDirectory.Failure) {
    guard !reportedFailure.exchange(true, ordering: .relaxed) else { return }
    show(.error("conversation history: \(failure)"))
  }

  /// Waits until every file operation asked for so far is done.
  func flushFiles() async {
    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
      files.async { continuation.resume() }
    }
  }

  /// Milliseconds since the epoch (for timestamps).
  static func now() -> UInt64 {
    var time = timespec()
    clock_gettime(CLOCK_REALTIME, &time)
    return UInt64(time.tv_sec) * 1000 + UInt64(time.tv_nsec) / 1_000_000
  }
}
