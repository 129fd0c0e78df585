import CNearbySystem
import NearbySystem

#if canImport(Glibc)
  import Glibc
#endif

/// The terminal the chat draws on: raw mode on the way in, the original settings on every
/// way out (a normal end, `exit`, a fatal signal — see `nearby_terminal_enter_raw`).
public final class Terminal: Sendable {
  public let input: Int32
  public let output: OutputWriter

  private init(input: Int32, output: OutputWriter) {
    self.input = input
    self.output = output
  }

  /// Puts the terminal in raw mode. - Returns: nil when `input` is not a terminal.
  public static func enterRawMode(input: Int32 = 0, output: Int32 = 1) -> Terminal? {
    guard isatty(input) == 1, isatty(output) == 1, nearby_terminal_enter_raw(input, output) == 0 else { return nil }
    return Terminal(input: input, output: OutputWriter(fd: output))
  }

  /// The size in cells (80×24 when the terminal does not say).
  public func size() -> TerminalChatModel.Size {
    var rows: UInt16 = 0
    var columns: UInt16 = 0
    if nearby_terminal_size(output.fd, &rows, &columns) == 0, rows > 0, columns > 0 {
      return TerminalChatModel.Size(columns: Int(columns), rows: Int(rows))
    }
    return TerminalChatModel.Size(columns: 80, rows: 24)
  }

  public func write(_ text: String) { output.write(text) }

  /// Gives the terminal back its original settings (idempotent).
  public func restore() { nearby_terminal_restore() }

  /// Ctrl-Z: restores the terminal and stops; returns in raw mode once continued (`fg`).
  public func suspend() { _ = nearby_terminal_suspend() }
}
