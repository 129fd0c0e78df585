import Nearby
import NearbyChat
import NearbyCommandLine
import NearbyRelay
import NearbyScript
import NearbySystem

#if canImport(Glibc)
  import Glibc
#endif

// Signals first, before any other thread exists (see SignalWatcher).
let signals = SignalWatcher.install()
let environment = currentEnvironment()
let arguments = Array(CommandLine.arguments.dropFirst())
let parser = ArgumentParser(root: NearbyCommands.root)
let help = HelpFormatter(root: NearbyCommands.root, width: terminalWidth())

let command: ParsedCommand
do {
  command = try parser.parse(arguments, environment: environment)
} catch {
  switch error {
  case .helpRequested(let path):
    OutputWriter.standardOutput.write(help.help(path, version: NearbyCommands.version))
    exit(0)
  case .versionRequested:
    OutputWriter.standardOutput.line("nearby \(NearbyCommands.version)")
    exit(0)
  case .usage(let message, let path):
    OutputWriter.standardError.write(help.usageError(message, path: path))
    exit(64)
  }
}

/// Reports a usage error found after parsing (a value that does not validate) and exits 64.
func usageError(_ message: String) -> Never {
  OutputWriter.standardError.write(help.usageError(message, path: command.path))
  exit(64)
}

/// The one root task of the process; everything else is structured under it.
func runCommand() async -> Int32 {
  switch command.path.last {
  case "chat": return await runChat(command)
  case "browse": return await runBrowse(command)
  case "relay": return await runRelay(command)
  case "bench": return await runBench(command)
  case "lab": return await runLab(command)
  default: usageError("unknown command")
  }
}

// Top-level code stays synchronous (no `await` here): the work runs detached from the main
// actor, on the pool, and the main thread only waits. (An async main, or dispatchMain(),
// parks the main thread in sigsuspend with every signal unblocked; SignalWatcher's handler
// copes with that too, but nothing needs the main thread to run a dispatch loop.)
Task.detached {
  exit(await runCommand())
}
while true { sleep(3600) }
