import Nearby
import NearbyChat
import NearbyCommandLine

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

let code: Int32
switch command.path.last {
case "chat": code = await runChat(command)
case "browse": code = await runBrowse(command)
case "relay": code = await runRelay(command)
case "bench": code = await runBench(command)
case "lab": code = await runLab(command)
default: usageError("unknown command")
}
exit(code)
