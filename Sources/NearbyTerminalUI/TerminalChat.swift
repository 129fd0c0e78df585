import Nearby
import NearbyChat
import NearbySystem

#if canImport(Glibc)
  import Glibc
#endif

/// `nearby chat` at a terminal: ``LineChat`` (every command and message goes through it)
/// with ``TerminalChatModel`` as its front end, drawn on a terminal in raw mode.
///
/// The task tree is the chat's (the session, its events, the input), with a task asking the
/// session for its peers once a second (the prompt's counts); SIGWINCH redraws and
/// SIGINT/SIGTERM/SIGHUP end the chat. Keys are read on a thread of their own.
public enum TerminalChat {
  /// Runs the chat until /quit, Ctrl-D or Ctrl-C on an empty line, or a signal.
  /// - Returns: the exit code, or nil when the terminal cannot be put in raw mode (the
  ///   caller then falls back to line mode).
  public static func run(
    session: NearbySession, connect: [Endpoint], color: Bool, stateDirectory: String, signals: AsyncStream<Int32>?
  ) async -> Int32? {
    guard let terminal = Terminal.enterRawMode() else { return nil }
    let (lines, linesContinuation) = AsyncStream.makeStream(of: String.self)
    let historyFile = HistoryFile(directory: stateDirectory)
    let model = TerminalChatModel(me: session.configuration.peer, size: terminal.size(), color: color, history: historyFile.load())
    let controller = TerminalChatController(model: model, terminal: terminal, lines: linesContinuation, historyFile: historyFile)
    controller.send(.start)
    let reader = KeyReader.start(
      fd: terminal.input, onBytes: { controller.receive($0) }, onTimeout: { controller.send(.escapeTimeout) },
      onEnd: { controller.endOfInput() })
    let chat = LineChat(session: session, output: controller, connect: connect)
    var failure: (any Error)?
    do {
      try await chat.runSession(
        input: lines, signals: signals,
        alongside: [
          .init("roster") {
            // The prompt's counts, corrected once a second from what the session knows.
            while true {
              try await Task.sleep(for: .seconds(1))
              let found = await session.discoveredPeers.map(\.peer)
              let connected = await session.connectedPeers
              let inviting = await session.pendingInvitations.map(\.peer)
              controller.send(.roster(found: found, connected: connected, inviting: inviting))
            }
          }
        ],
        onSignal: { signal in
          switch signal {
          case SIGWINCH: controller.send(.resize(terminal.size()))
          case SIGINT, SIGTERM, SIGHUP: await chat.quit()
          default: break
          }
          return false
        })
    } catch {
      failure = error
    }
    reader?.stop()
    linesContinuation.finish()
    controller.send(.finish)
    terminal.restore()
    if let failure {
      OutputWriter.standardError.line("nearby chat: \(failure)")
      return 1
    }
    return 0
  }
}
