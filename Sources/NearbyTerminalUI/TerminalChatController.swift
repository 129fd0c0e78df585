import NearbyChat
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// The shell around ``TerminalChatModel``: it feeds the model keys (from the reader
/// thread), chat lines (as the ``ChatOutput`` of ``LineChat``), resizes and roster
/// snapshots, and carries out the effects. The model and the terminal writes are under one
/// lock, so output from different threads never interleaves and always matches the state.
final class TerminalChatController: ChatOutput, Sendable {
  private let model: Mutex<TerminalChatModel>
  let terminal: Terminal
  private let lines: AsyncStream<String>.Continuation
  private let historyFile: HistoryFile

  init(model: TerminalChatModel, terminal: Terminal, lines: AsyncStream<String>.Continuation, historyFile: HistoryFile) {
    self.model = Mutex(model)
    self.terminal = terminal
    self.lines = lines
    self.historyFile = historyFile
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
      case .remember(let line): historyFile.append(line)
      case .quit: lines.yield("/quit")
      case .forceQuit:
        send(.finish)
        terminal.restore()
        exit(130)
      case .suspend:
        terminal.suspend()
        send(.resize(terminal.size()))
      }
    }
  }

  /// Milliseconds since the epoch (for timestamps).
  static func now() -> UInt64 {
    var time = timespec()
    clock_gettime(CLOCK_REALTIME, &time)
    return UInt64(time.tv_sec) * 1000 + UInt64(time.tv_nsec) / 1_000_000
  }
}
