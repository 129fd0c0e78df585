import NearbySystem

#if canImport(Glibc)
  import Glibc
#endif

/// `lan selftest`: the harness checked against real Avahi, printing `PASS  ...` or
/// `FAIL  ...: detail` per check and a summary; exit 0 when everything passed.
///
/// (a) a loopback host: a service published there is resolved to 127.0.0.1 with its TXT,
/// and its daemons are gone after it exits. (b) two hosts on one segment: b sees a's service
/// and resolves a's host name; a's avahi-daemon stops and starts again. (c) two segments
/// joined by r: r sees both sides, c never sees a. Then: nothing the self-test started is
/// left, and no daemon runs in the machine's own network namespace.
struct SelfTest {
  let harness: LANHarness
  static let serviceType = "_nearby-devices._tcp"

  /// The checks so far (printed as they are made, unless `echo` is off: the tests).
  final class Report: @unchecked Sendable {
    let echo: Bool
    var passed = 0
    /// The failed checks, each with what went wrong.
    var failures: [String] = []
    var failed: Int { failures.count }

    init(echo: Bool = true) { self.echo = echo }

    func record(_ ok: Bool, _ name: String, _ detail: String = "") {
      let line = (ok ? "PASS  " : "FAIL  ") + name + (ok || detail.isEmpty ? "" : ": \(detail)")
      if ok { passed += 1 } else { failures.append(line) }
      if echo { OutputWriter.standardOutput.line(line) }
    }
  }

  /// Runs every check. - Returns: 0 when all passed, 1 when one failed, 2 or 3 when the
  /// harness cannot run here, 128 + N when a signal interrupted it.
  func run() async -> Int32 {
    if let problem = await harness.check() {
      OutputWriter.standardError.line("lan: " + problem.message)
      return problem.exitCode
    }
    do throws(LANError) {
      try harness.tools.require(ToolPaths.selfTest)
    } catch {
      OutputWriter.standardError.line("lan: " + error.message)
      return error.exitCode
    }
    let started = ContinuousClock.now
    let report = Report()
    var launched = Started()
    await loopback(report, &launched)
    let first = "selftest-\(getpid())-1"
    let second = "selftest-\(getpid())-2"
    if harness.interruption == nil { await twoHosts(first, report, &launched) }
    if harness.interruption == nil { await twoSegments(second, report, &launched) }
    // Whatever happened, nothing is left.
    await finish(launched, lans: [first, second])
    if let signal = harness.interruption { return 128 + signal }
    await leftovers(report, launched)
    let seconds = (ContinuousClock.now - started).components.seconds
    OutputWriter.standardOutput.line("selftest: \(report.passed) passed, \(report.failed) failed (\(seconds)s)")
    return report.failed == 0 ? 0 : 1
  }

  /// What the self-test started, to check that it is gone and to clean up.
  struct Started {
    var pids: [pid_t] = []
    var publishers: [ChildProcess] = []
  }

  /// Ends the publishers and removes the LANs (they are gone already unless a check failed).
  func finish(_ started: Started, lans: [String]) async {
    for publisher in started.publishers {
      publisher.terminate(SIGKILL)
      await publisher.wait()
    }
    for id in lans { try? await harness.down(id: id) }
  }

  /// (a) one host on loopback.
  func loopback(_ report: Report, _ started: inout Started) async {
    var template = Array("/tmp/nearby-selftest-XXXXXX".utf8CString)
    let fd = mkstemp(&template)
    let pidFile = String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    if fd >= 0 { close(fd) }
    defer { unlink(pidFile) }
    let executable = harness.executable
    let result = await LabProcess.capture(
      [executable, "loopback", "--host-name", "nb-selftest", "--", executable, "__selftest-loopback", pidFile], environment: harness.environment,
      timeout: .seconds(60))
    report.record(result.code == 0, "(a) loopback: avahi-publish seen by avahi-browse -rpt as 127.0.0.1 with TXT", result.output)
    let pids = (LabFiles.read(pidFile) ?? "").split(separator: "\n").compactMap { pid_t($0) }
    started.pids += pids
    report.record(!pids.isEmpty && !pids.contains(where: ProcessTable.isAlive), "(a) loopback: its dbus-daemon and avahi-daemon are gone after exit")
  }

  /// The part of (a) inside the loopback host (`__selftest-loopback PIDFILE`).
  func insideLoopback(pidFile: String) async -> Int32 {
    let environment = harness.environment
    var ok = true
    if environment["NEARBY_LAN"] != "loopback" || environment["NEARBY_AVAHI"] != "1" {
      OutputWriter.standardOutput.line("environment not set (NEARBY_LAN=\(environment["NEARBY_LAN"] ?? ""))")
      ok = false
    }
    let directory = LANStateLayout.loopbackDirectory
    let pids = ["avahi.pid", "dbus.pid"].compactMap { LabFiles.firstLine(directory + "/" + $0) }
    try? LabFiles.write(pids.map { $0 + "\n" }.joined(), to: pidFile)
    let publisher = try? ChildProcess(
      harness.tools.path("avahi-publish"), ["-s", "nearby-selftest", Self.serviceType, "1234", "id=abc", "name=test", "v=1"], standardInput: .null,
      standardOutput: .null, standardError: .null)
    let hostName = environment["NEARBY_LAN_HOSTNAME"] ?? ""
    if await !pollBrowse(nil, interface: "lo", name: "nearby-selftest", hostName: hostName, address: "127.0.0.1") {
      OutputWriter.standardOutput.line("avahi-browse did not resolve the service to 127.0.0.1 with its TXT; got:")
      OutputWriter.standardOutput.line(await browse(nil).split(separator: "\n").map { "    " + $0 }.joined(separator: "\n"))
      ok = false
    }
    if let publisher {
      publisher.terminate(SIGKILL)
      await publisher.wait()
    }
    return ok ? 0 : 1
  }

  /// Records the PIDs of every anchor and daemon of LAN `id`.
  func recordPIDs(of id: String, _ started: inout Started) {
    let directory = LANStateLayout.lanDirectory(id)
    for host in LabFiles.list(directory) ?? [] where LabFiles.isDirectory(directory + "/" + host) {
      for file in ["anchor.pid", "dbus.pid", "avahi.pid"] {
        if let pid = LabFiles.firstLine(directory + "/" + host + "/" + file).flatMap({ pid_t($0) }) { started.pids.append(pid) }
      }
    }
  }

  /// Nothing the self-test started is left, and no daemon runs in the machine's namespace.
  /// - Parameter minimum: how many PIDs the checks before must have recorded.
  func leftovers(_ report: Report, _ started: Started, minimum: Int = 8) async {
    var left = ""
    let enough = started.pids.count >= minimum
    let gone = await ProcessTable.waitUntil(.seconds(5)) {
      left = started.pids.filter { ProcessTable.isAlive($0) && ["avahi-daemon", "dbus-daemon", "sleep"].contains(ProcessTable.name($0)) }
        .map { "\($0)(\(ProcessTable.name($0)))" }.joined(separator: " ")
      return left.isEmpty
    }
    report.record(
      enough && gone, "none of the \(started.pids.count) daemons/anchors the selftest started is left",
      enough ? left : "only \(started.pids.count) PIDs recorded")
    let machine = NamespaceGuard.machine(environment: harness.environment)
    let daemons = ProcessTable.all().filter { ["avahi-daemon", "dbus-daemon"].contains(ProcessTable.name($0)) && ProcessTable.isAlive($0) }
    let bad = daemons.filter { NamespaceGuard.link("/proc/\($0)/ns/net") == machine }.map(String.init).joined(separator: " ")
    report.record(
      machine != nil && bad.isEmpty, "no avahi-daemon/dbus-daemon runs in the machine's own network namespace",
      machine == nil ? "cannot read it" : bad)
  }
}
