/// Why a harness command failed, with the exit code the `nearby-lan` tool gives for it.
///
/// The message says what happened and what to do; the tool prints it as `lan: MESSAGE`.
public struct LANError: Error, Sendable, Equatable, CustomStringConvertible {
  /// The exit codes of the harness.
  public enum Kind: Int32, Sendable {
    /// Something failed at run time (exit 1).
    case failed = 1
    /// Private namespaces cannot be made here (exit 2).
    case cannotIsolate = 2
    /// Tools the harness runs are not installed (exit 3).
    case toolsMissing = 3
    /// The command line is wrong (exit 64).
    case usage = 64
  }

  public var kind: Kind
  public var message: String

  public init(_ kind: Kind, _ message: String) {
    self.kind = kind
    self.message = message
  }

  /// A run-time failure (exit 1).
  public static func failed(_ message: String) -> LANError { LANError(.failed, message) }
  /// A usage error (exit 64).
  public static func usage(_ message: String) -> LANError { LANError(.usage, message) }

  public var exitCode: Int32 { kind.rawValue }
  public var description: String { message }
}
