import Dispatch
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

  /// The files of the state directory the chat keeps, opened off the cooperative pool.
  struct Files: Sendable {
    var history: HistoryFile
    /// What was typed in earlier runs.
    var typed: [String]
    var logs: ConversationLogs?
    var failure: PrivateDirectory.Failure?

    static func open(_ directory: String) async -> Files {
      await withCheckedContinuation { continuation in
        DispatchQueue.global().async {
          let history = HistoryFile(directory: directory)
          do throws(PrivateDirectory.Failure) {
            let logs = try ConversationLogs(stateDirectory: directory)
            continuation.resume(returning: Files(history: history, typed: history.load(), logs: logs))
          } catch {
            continuation.resume(returning: Files(history: history, typed: history.load(), failure: error))
          }
        }
      }
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
    var files: Files?
    if options.history, let stateDirectory { files = await Files.open(stateDirectory) }
    let historyFile = files?.history
    let logs = files?.logs
    let model = TerminalChatModel(
      me: session.configuration.peer, size: terminal.size(), settings: options.settings, history: files?.typed ?? [])
    let controller = TerminalChatController(model: model, terminal: terminal, lines: linesContinuation, historyFile: historyFile, logs: logs)
    controller.send(.start)
    if let failure = files?.failure { controller.show(.error("conversation history is off: \(failure)")) }
    let reader = KeyReader.start(
      fd: terminal.input, onBytes: { controller.receive($0) }, onTimeout: { controller.send(.escapeTimeout) },
      onEnd: { controller.endOfInput() })
    let chat = LineChat(session: session, output: controller, connect: connect)
    var sessionFailure: (any Error)?
    do {
      try await chat.runSession(
        input: lines.map { @Sendable in ChatInput.line($0) }, signals: signals,
        alongside: [
          .init("roster") {
            // The counts in the status bar, corrected once a second from what the session knows.
            while true {
              try await Task.sleep(for: .seconds(1))
              let found = await session.discoveredPeers.map(\.peer)
              let connected = await session.connectedPeers
              let inviting = await session.pendingInvitations.map(\.peer)
              let verified = Set(session.knownPeers.filter(\.isVerified).map(\.id))
              controller.send(.roster(found: found, connected: connected, inviting: inviting, verified: verified))
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
