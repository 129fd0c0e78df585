// nearby-lan: the private-LAN harness (scripts/lan runs it). Wiring only: see LANTool.
import NearbyLab
import NearbySystem

#if canImport(Glibc)
  import Glibc
#endif

let tool = LANTool(arguments: Array(CommandLine.arguments.dropFirst()))
// loopback, exec and a host's anchor become other programs, before any other thread exists.
tool.replaceProcessIfNeeded()
let signals = SignalWatcher.install([SIGINT, SIGTERM, SIGHUP])
Task.detached {
  exit(await tool.run(signals: signals?.signals))
}
while true { sleep(3600) }
