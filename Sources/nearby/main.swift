import NearbyCommandLine
import NearbySystem

#if canImport(Glibc)
  import Glibc
#endif

// Signals first, before any other thread exists (see SignalWatcher).
let signals = SignalWatcher.install()
let environment = ProcessEnvironment.current()
let tools: [String: any Tool.Type] = [
  "chat": ChatTool.self, "send": SendTool.self, "receive": ReceiveTool.self, "browse": BrowseTool.self, "relay": RelayTool.self,
  "peers": PeersTool.self, "bench": BenchTool.self,
  "lab": LabTool.self,
]
let help = HelpFormatter(root: NearbyCommands.root, width: environment.terminalWidth)

/// `Error: ...` and the usage of the command at `path`, for stderr.
func usageText(_ message: String, path: [String]) -> String { help.usageError(message, path: path) }

let tool: any Tool
do {
  let parsed = try ArgumentParser(root: NearbyCommands.root).parse(environment.arguments, environment: environment.variables)
  guard let type = parsed.path.last.flatMap({ tools[$0] }) else {
    throw CommandLineError.usage("unknown command", path: parsed.path)
  }
  tool = try type.init(parsed, environment: environment)
} catch {
  switch error as? CommandLineError {
  case .helpRequested(let path):
    OutputWriter.standardOutput.write(help.help(path, version: NearbyCommands.version))
    exit(0)
  case .versionRequested:
    OutputWriter.standardOutput.line("nearby \(NearbyCommands.version)")
    exit(0)
  case .usage(let message, let path):
    OutputWriter.standardError.write(usageText(message, path: path))
    exit(64)
  case nil:
    OutputWriter.standardError.line("Error: \(error)")
    exit(1)
  }
}

// Top-level code stays synchronous (no `await` here): the work runs detached from the main
// actor, on the pool, and the main thread only waits. (An async main, or dispatchMain(),
// parks the main thread in sigsuspend with every signal unblocked; SignalWatcher's handler
// copes with that too, but nothing needs the main thread to run a dispatch loop.)
Task.detached { [tool] in
  exit(await tool.run(signals: signals?.signals))
}
while true { sleep(3600) }
