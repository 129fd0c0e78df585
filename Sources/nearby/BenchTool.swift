import NearbyBench
import NearbyCommandLine
import NearbySystem

#if canImport(Glibc)
  import Glibc
#endif

/// `nearby bench`: every figure of our stack next to a baseline measured in the same run.
struct BenchTool: Tool {
  static let spec = NearbyCommands.Bench.spec

  let quick: Bool
  let json: Bool
  let only: Set<String>
  /// The hidden peer-process mode of the memory benchmark.
  let peerProcess: String?
  /// The hidden target-process mode of the hostile benchmarks and tests.
  let targetProcess: String?

  init(_ parsed: ParsedCommand, environment: ProcessEnvironment) throws(CommandLineError) {
    quick = parsed.isSet(NearbyCommands.Bench.quick)
    json = parsed.isSet(NearbyCommands.Common.json)
    only = Set(try parsed.values(NearbyCommands.Bench.only))
    peerProcess = environment["NEARBY_BENCH_PEERS"]
    targetProcess = environment["NEARBY_BENCH_TARGET"]
  }

  func run(signals: AsyncStream<Int32>?) async -> Int32 {
    // Ctrl-C or SIGTERM stop a benchmark at once (its peer process dies with it).
    if let signals {
      Task.detached {
        for await signal in signals where signal == SIGINT || signal == SIGTERM { exit(128 + signal) }
      }
    }
    if let targetProcess {
      ChildProcess.dieWithParent()
      return await BenchRunner.runTargetProcess(targetProcess)
    }
    if let peerProcess {
      ChildProcess.dieWithParent()
      return await BenchRunner.runPeerProcess(peerProcess)
    }
    let runner = BenchRunner(quick: quick, only: only) { OutputWriter.standardError.line($0) }
    do {
      let results = try await runner.run()
      OutputWriter.standardOutput.write(json ? ResultTable.json(results) : ResultTable.text(results))
      return 0
    } catch {
      return failure("\(error)")
    }
  }
}
