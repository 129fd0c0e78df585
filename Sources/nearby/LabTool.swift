import NearbyCommandLine
import NearbyLab
import NearbySystem

/// `nearby lab`: several peers on private LANs with real Avahi.
struct LabTool: Tool {
  static let spec = NearbyCommands.Lab.spec
  typealias Options = NearbyCommands.Lab

  let plan: LabPlan
  let environment: ProcessEnvironment

  init(_ parsed: ParsedCommand, environment: ProcessEnvironment) throws(CommandLineError) {
    var options = LabOptions()
    options.hosts = try parsed.value(Options.hosts, default: [])
    options.loopback = parsed.isSet(Options.loopback)
    options.segments = try parsed.values(Options.segments)
    options.command = parsed.variadic("command")
    if let timeout = try parsed.value(Options.timeout) { options.timeout = timeout }
    var files: [String] = []
    if let directory = try parsed.value(Options.scripts) {
      let absolute = LabFiles.absolute(directory)
      guard LabFiles.isDirectory(absolute), let listed = LabFiles.list(absolute) else {
        throw .usage("invalid --scripts '\(directory)': not a readable directory", path: parsed.path)
      }
      options.scriptsDirectory = absolute
      files = listed
    }
    do throws(LabUsageError) {
      plan = try LabPlan.make(options, files: files) { LabFiles.read(options.scriptsDirectory! + "/" + $0) }
    } catch {
      throw .usage(error.message, path: parsed.path)
    }
    self.environment = environment
  }

  func run(signals: AsyncStream<Int32>?) async -> Int32 {
    // Every script and the faults file are checked before anything is built.
    let problems = Lab.scriptErrors(plan)
    if !problems.isEmpty {
      for problem in problems { OutputWriter.standardError.line(problem) }
      let count = problems.count
      OutputWriter.standardError.line(
        "nearby lab: \(count) file\(count == 1 ? " has" : "s have") errors; see the grammars in the README (Scripted peers, Faults)")
      return 64
    }
    let lab = Lab(
      plan: plan, arguments: environment.arguments, environment: environment.variables,
      executable: LabFiles.executablePath(fallback: environment.executable))
    return await lab.run(signals: signals)
  }
}
