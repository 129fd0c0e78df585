import NearbySystem

#if canImport(Glibc)
  import Glibc
#endif

extension SelfTest {
  /// (b) two hosts on one segment.
  func twoHosts(_ id: String, _ report: Report, _ started: inout Started) async {
    let built = await up("(b)", id, ["a,b"], report)
    if built, let hostA = try? harness.hostName(id: id, host: "a"), let addressA = try? harness.address(id: id, host: "a") {
      publish(id, "a", "nearby-selftest-a", &started)
      let seen = await pollBrowse((id, "b"), interface: "seg1", name: "nearby-selftest-a", hostName: hostA, address: addressA)
      report.record(seen, "(b) b sees a's service at \(addressA) with TXT", await browse((id, "b")).replacing("\n", with: "|"))
      let resolved = await runIn(id, "b", ["getent", "hosts", hostA + ".local"])
      report.record(resolved.hasPrefix(addressA + " "), "(b) getent hosts \(hostA).local on b -> \(addressA)", resolved)
      // The daemon can be stopped and started again; a new publication after the restart is
      // seen on b again.
      let a = LANCommand.AvahiTarget.host(id: id, host: "a")
      var ok = true
      do throws(LANError) {
        try await harness.avahi(a, .stop)
        if try await harness.avahi(a, .status) != nil { ok = false }
        try await harness.avahi(a, .start)
        if try await harness.avahi(a, .status)?.hasPrefix("running ") != true { ok = false }
      } catch {
        ok = false
      }
      publish(id, "a", "nearby-selftest-a2", &started)
      ok = await pollBrowse((id, "b"), interface: "seg1", name: "nearby-selftest-a2", hostName: hostA, address: addressA) && ok
      report.record(ok, "(b) avahi on a: stop, status=stopped, start, status=running, republish seen on b")
    }
    recordPIDs(of: id, &started)
    var down = (try? await harness.down(id: id)) != nil
    down = (try? await harness.down(id: id)) != nil && down
    report.record(down && gone(id), "(b) lan down \(id) (twice) removes namespaces and state")
  }

  /// (c) two segments joined by r.
  func twoSegments(_ id: String, _ report: Report, _ started: inout Started) async {
    let built = await up("(c)", id, ["a,r", "r,c"], report)
    if built, let hostA = try? harness.hostName(id: id, host: "a"), let hostC = try? harness.hostName(id: id, host: "c") {
      let addresses = [("a", nil), ("r", 1), ("r", 2), ("c", nil)].map { try? harness.address(id: id, host: $0.0, segment: $0.1) }
      report.record(addresses == ["10.77.1.1", "10.77.1.2", "10.77.2.2", "10.77.2.3"], "(c) addresses a=10.77.1.1 r=10.77.1.2,10.77.2.2 c=10.77.2.3")
      publish(id, "a", "nearby-selftest-a", &started)
      publish(id, "c", "nearby-selftest-c", &started)
      var ok = await pollBrowse((id, "r"), interface: "seg1", name: "nearby-selftest-a", hostName: hostA, address: "10.77.1.1")
      ok = await pollBrowse((id, "r"), interface: "seg2", name: "nearby-selftest-c", hostName: hostC, address: "10.77.2.3") && ok
      report.record(ok, "(c) r sees both a's (seg1) and c's (seg2) services", await browse((id, "r")).replacing("\n", with: "|"))
      // c sees its own service (so browsing works there) but never a's.
      ok = await pollBrowse((id, "c"), interface: "seg2", name: "nearby-selftest-c", hostName: hostC, address: "10.77.2.3")
      try? await Task.sleep(for: .seconds(1))
      let seenOnC = await browse((id, "c"))
      ok = ok && !Self.browseSeesName(seenOnC, "nearby-selftest-a")
      report.record(ok, "(c) c does not see a's service (other segment)", seenOnC.replacing("\n", with: "|"))
    }
    recordPIDs(of: id, &started)
    let down = (try? await harness.down(id: id)) != nil
    report.record(down && gone(id), "(c) lan down \(id) removes namespaces and state")
  }

  /// `lan up`, recorded as a check.
  private func up(_ part: String, _ id: String, _ segments: [String], _ report: Report) async -> Bool {
    do throws(LANError) {
      try await harness.up(id: id, segments: segments)
      report.record(true, "\(part) lan up \(id) \(segments.joined(separator: " "))")
      return true
    } catch {
      report.record(false, "\(part) lan up \(id) \(segments.joined(separator: " "))", error.message)
      return false
    }
  }

  private func gone(_ id: String) -> Bool { harness.namespaces(of: id).isEmpty && !LabFiles.exists(LANStateLayout.lanDirectory(id)) }

  /// Starts avahi-publish of `name` inside a host, in the background.
  private func publish(_ id: String, _ host: String, _ name: String, _ started: inout Started) {
    guard let found = try? harness.host(id: id, name: host) else { return }
    let command = found.entering(
      [harness.tools.path("avahi-publish"), "-s", name, Self.serviceType, "1234", "id=abc", "name=test", "v=1"],
      nsenter: harness.tools.path("nsenter"))
    if let publisher = try? ChildProcess(
      command[0], Array(command.dropFirst()), environment: found.environment(harness.environment), standardInput: .null, standardOutput: .null,
      standardError: .null)
    {
      started.publishers.append(publisher)
    }
  }

  /// Runs a command in a host (at most 10 s) and returns its output.
  func runIn(_ id: String, _ host: String, _ command: [String]) async -> String {
    guard let found = try? harness.host(id: id, name: host) else { return "(no host \(host))" }
    let line = found.entering(command, nsenter: harness.tools.path("nsenter"))
    return await LabProcess.capture(line, environment: found.environment(harness.environment), timeout: .seconds(10)).output
  }

  /// `avahi-browse -rpt` of the service type, in a host (or here).
  func browse(_ host: (id: String, name: String)?) async -> String {
    let command = [harness.tools.path("avahi-browse"), "-rpt", Self.serviceType]
    guard let host else { return await LabProcess.capture(command, timeout: .seconds(10)).output }
    return await runIn(host.id, host.name, command)
  }

  /// Browses (for up to ~15 s) until the service `name` is resolved as expected.
  func pollBrowse(_ host: (id: String, name: String)?, interface: String, name: String, hostName: String, address: String) async -> Bool {
    for _ in 0..<30 {
      if Self.browseHas(await browse(host), interface: interface, name: name, hostName: hostName, address: address) { return true }
      try? await Task.sleep(for: .milliseconds(500))
    }
    return false
  }

  /// Whether `avahi-browse -p` output has a resolved line for instance `name` on `interface`
  /// at `hostName.local`, `address` and port 1234, with the self-test's TXT records.
  static func browseHas(_ output: String, interface: String, name: String, hostName: String, address: String) -> Bool {
    let prefix = "=;\(interface);IPv4;\(name);\(serviceType);local;\(hostName).local;\(address);1234;"
    return output.split(separator: "\n").contains { line in
      line.hasPrefix(prefix) && line.contains("\"id=abc\"") && line.contains("\"name=test\"") && line.contains("\"v=1\"")
    }
  }

  /// Whether `avahi-browse -p` output mentions instance `name` at all.
  static func browseSeesName(_ output: String, _ name: String) -> Bool {
    output.split(separator: "\n").contains { line in
      let fields = line.split(separator: ";", omittingEmptySubsequences: false)
      return fields.count > 3 && (fields[0] == "=" || fields[0] == "+") && fields[2] == "IPv4" && fields[3] == name
    }
  }
}
