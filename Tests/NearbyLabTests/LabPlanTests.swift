import NearbyLab
import Testing

@Suite("nearby lab: planning hosts, segments and what each runs")
struct LabPlanTests {
  func options(
    hosts: [String] = [], loopback: Bool = false, segments: [String] = [], scripts: String? = nil, command: [String] = []
  ) -> LabOptions {
    var options = LabOptions()
    options.hosts = hosts
    options.loopback = loopback
    options.segments = segments
    options.scriptsDirectory = scripts
    options.command = command
    return options
  }

  @Test func hostsWithScriptsOnOneSegment() throws {
    let plan = try LabPlan.make(options(hosts: ["alice", "bob"], scripts: "/ex"), files: ["alice.script", "bob.script", "README.md"])
    #expect(plan.network == .segments([["alice", "bob"]]))
    #expect(plan.hosts == [.init(name: "alice", role: .script(path: "/ex/alice.script")), .init(name: "bob", role: .script(path: "/ex/bob.script"))])
    #expect(
      plan.hosts[0].arguments(nearby: "/r/.build/debug/nearby", stateDirectory: "/tmp/s/alice") == [
        "/r/.build/debug/nearby", "chat", "--name", "alice", "--script", "/ex/alice.script", "--state-dir", "/tmp/s/alice",
      ])
  }

  @Test func hostsComeFromTheScriptsWhenNotGiven() throws {
    let plan = try LabPlan.make(options(loopback: true, scripts: "/ex"), files: ["bob.script", "alice.script"])
    #expect(plan.network == .loopback)
    #expect(plan.hosts.map(\.name) == ["alice", "bob"])
  }

  @Test func segmentsServicesAndIdleHosts() throws {
    let plan = try LabPlan.make(
      options(segments: ["a,r", "r,c x,c"], scripts: "/ex"), files: ["a.script", "c.script", "r.cmd"],
      readFile: { $0 == "r.cmd" ? "# the relay\n\n  nearby relay --name {host} --connect-found  \n" : nil })
    #expect(plan.network == .segments([["a", "r"], ["r", "c"], ["x", "c"]]))
    #expect(plan.hosts.map(\.name) == ["a", "r", "c", "x"])
    #expect(plan.hosts[1].role == .service(command: "nearby relay --name {host} --connect-found"))
    #expect(plan.hosts[1].arguments(nearby: "n", stateDirectory: "s") == ["/bin/sh", "-c", "nearby relay --name r --connect-found"])
    #expect(plan.hosts[3].role == .idle && plan.hosts[3].arguments(nearby: "n", stateDirectory: "s") == nil)
    #expect(plan.hosts.map(\.runsToCompletion) == [true, false, true, false])
  }

  @Test func aCommandRunsInHostsWithoutAScript() throws {
    let plan = try LabPlan.make(options(hosts: ["a", "b"], scripts: "/ex", command: ["echo", "{host}", "x{host}y"]), files: ["a.script"])
    #expect(plan.hosts[0].role == .script(path: "/ex/a.script"))
    #expect(plan.hosts[1].arguments(nearby: "n", stateDirectory: "s") == ["echo", "b", "xby"])
    #expect(plan.hosts[1].runsToCompletion)
  }

  @Test(
    arguments: [
      (["a", "a"], [], false, nil, ["true"], "host 'a' appears twice in --hosts"),
      (["a_b"], [], false, nil, ["true"], "invalid host name 'a_b'"),
      (["a"], [], false, nil, [], "nothing to run"),
      ([], [], false, nil, ["true"], "no hosts"),
      ([], ["a,b"], true, nil, ["true"], "--loopback and --segments exclude each other"),
      ([], ["a,,b"], false, nil, ["true"], "invalid segment 'a,,b'"),
      ([], ["a,a"], false, nil, ["true"], "segment 'a,a' names a host twice"),
      (["a", "b", "c"], ["a,b"], false, nil, ["true"], "host 'c' is in --hosts but on no segment"),
      (["a"], ["a,b"], false, nil, ["true"], "host 'b' is on a segment but not in --hosts"),
      ([], ["a,r"], false, nil, ["r,c"], "'r,c' looks like a segment, not a command"),
      (["a"], [], false, "/ex", [], "/ex has a file for 'zed', which is not one of the hosts (a)"),
    ] as [([String], [String], Bool, String?, [String], String)])
  func usageErrors(hosts: [String], segments: [String], loopback: Bool, scripts: String?, command: [String], message: String) {
    let files = scripts == nil ? [] : ["zed.script"]
    #expect {
      _ = try LabPlan.make(options(hosts: hosts, loopback: loopback, segments: segments, scripts: scripts, command: command), files: files)
    } throws: { error in
      (error as? LabUsageError)?.message.contains(message) == true
    }
  }

  @Test func scriptsDirectoryProblems() {
    #expect(throws: LabUsageError("/ex has both a.script and a.cmd: a host runs one or the other")) {
      try LabPlan.make(options(scripts: "/ex"), files: ["a.script", "a.cmd"], readFile: { _ in "true" })
    }
    #expect(throws: LabUsageError("/ex/a.cmd has no command (only comments or blank lines)")) {
      try LabPlan.make(options(scripts: "/ex"), files: ["a.cmd"], readFile: { _ in "# nothing\n\n" })
    }
    #expect(throws: LabUsageError("/ex has no HOST.script or HOST.cmd files, and no command was given after --")) {
      try LabPlan.make(options(scripts: "/ex"), files: ["notes.txt"])
    }
    #expect(throws: LabUsageError("/ex/a-b.script: 'a-b' is not a valid host name (1-24 letters and digits)")) {
      try LabPlan.make(options(scripts: "/ex"), files: ["a-b.script"])
    }
  }
}

@Suite("nearby lab: finding the harness (nearby-lan)")
struct LANHarnessLocationTests {
  @Test func nextToNearbyFirst() throws {
    let found = try LANHarness.locate(environment: ["NEARBY_LAN_SCRIPT": "/x/lan", "PATH": "/usr/bin"], executable: "/r/.build/debug/nearby") {
      $0 == "/r/.build/debug/nearby-lan" || $0 == "/x/lan" || $0 == "/usr/bin/nearby-lan"
    }
    #expect(found == "/r/.build/debug/nearby-lan")
  }

  @Test func thenTheEnvironment() throws {
    let found = try LANHarness.locate(environment: ["NEARBY_LAN_SCRIPT": "/x/lan", "PATH": "/usr/bin"], executable: "/usr/local/bin/nearby") {
      $0 == "/x/lan" || $0 == "/usr/bin/nearby-lan"
    }
    #expect(found == "/x/lan")
  }

  @Test func thenThePath() throws {
    let found = try LANHarness.locate(environment: ["PATH": "/opt/bin:/usr/bin"], executable: "/usr/local/bin/nearby") {
      $0 == "/usr/bin/lan" || $0 == "/usr/bin/nearby-lan"
    }
    #expect(found == "/usr/bin/nearby-lan")
  }

  @Test func notFoundSaysWhereItLookedAndWhatToDo() {
    #expect {
      try LANHarness.locate(environment: ["PATH": "/usr/bin", "NEARBY_LAN_SCRIPT": "/missing"], executable: "/usr/local/bin/nearby") { _ in false }
    } throws: { error in
      let text = "\(error)"
      return text.contains("cannot find the private-LAN harness nearby-lan") && text.contains("/usr/local/bin/nearby-lan")
        && text.contains("NEARBY_LAN_SCRIPT=/missing (not an executable file)") && text.contains("nearby-lan in PATH")
        && text.contains("swift build --product nearby-lan")
    }
  }
}
