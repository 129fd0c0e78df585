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
/// session for its peers once a second (the counts in the status bar); SIGWINCH redraws and
/// SIGINT/SIGTERM/SIGHUP end the chat. Keys are read on a thread of their own.
public enum TerminalChat {
  /// The options of the terminal chat.
  public struct Options: Sendable {
    public var settings: TerminalChatModel.Settings
    /// Keep the input history and the conversations' logs in the state directory, and show
    /// them again (`--no-history` turns it off: nothing is read or written).
    public var history: Bool

    public init(settings: TerminalChatModel.Settings = .init(), history: Bool = true) {
      self.settings = settings
      self.history = history
    }
  }

  /// Runs the chat until /quit, Ctrl-D or Ctrl-C on an empty line, or a signal.
  /// - Returns: the exit code, or nil when the terminal cannot be put in raw mode (the
  ///   caller then falls back to line mode).
  public static func run(
    session: NearbySession, connect: [Endpoint], options: Options, stateDirectory: String?, signals: AsyncStream<Int32>?
  ) async -> Int32? {
    guard let terminal = Terminal.enterRawMode() else { return nil }
    let (lines, linesContinuation) = AsyncStream.makeStream(of: String.self)
    var historyFile: HistoryFile?
    var logs: ConversationLogs?
    var failure: PrivateDirectory.Failure?
    if options.history, let stateDirectory {
      historyFile = HistoryFile(directory: stateDirectory)
      do throws(PrivateDirectory.Failure) {
        logs = try ConversationLogs(stateDirectory: stateDirectory)
      } catch {
        failure = error
      }
    }
    let model = TerminalChatModel(
      me: session.configuration.peer, size: terminal.size(), settings: options.settings, history: historyFile?.load() ?? [])
    let controller = TerminalChatController(model: model, terminal: terminal, lines: linesContinuation, historyFile: historyFile, logs: logs)
    controller.send(.start)
    if let failure { controller.show(.error("conversation history is off: \(failure)")) }
    let reader = KeyReader.start(
      fd: terminal.input, onBytes: { controller.receive($0) }, onTimeout: { controller.send(.escapeTimeout) },
      onEnd: { controller.endOfInput() })
    let chat = LineChat(session: session, output: controller, connect: connect)
    var sessionFailure: (any Error)?
    do {
      try await chat.runSession(
        input: lines, signals: signals,
        alongside: [
          .init("roster") {
            // The counts in the status bar, corrected once a second from what the session knows.
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
      sessionFailure = error
    }
    reader?.stop()
    linesContinuation.finish()
    await controller.flushFiles()
    controller.send(.finish)
    terminal.restore()
    if let sessionFailure {
      OutputWriter.standardError.line("nearby chat: \(sessionFailure)")
      return 1
    }
    return 0
  }
}
