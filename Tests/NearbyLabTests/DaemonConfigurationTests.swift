import NearbyLab
import Testing

@Suite("Harness: daemon configurations and the isolation check")
struct DaemonConfigurationTests {
  @Test func avahiOnTheHostsInterfacesOnly() {
    let text = DaemonConfiguration.avahi(hostName: "t2-r", interfaces: "seg1,seg2")
    let lines = Set(text.split(separator: "\n").map(String.init))
    for expected in [
      "[server]", "host-name=t2-r", "use-ipv6=no", "allow-interfaces=seg1,seg2", "enable-dbus=yes", "clients-max=16384", "enable-wide-area=no",
      "publish-hinfo=no", "publish-workstation=no", "enable-reflector=no",
    ] {
      #expect(lines.contains(expected), "\(expected)")
    }
    #expect(!lines.contains { $0.hasPrefix("ratelimit") }, "no packet rate limit")
    #expect(text.hasSuffix("\n"))
  }

  @Test func dbusIncludesTheSystemBusWithHigherLimits() {
    let text = DaemonConfiguration.dbus(including: "/usr/share/dbus-1/system.conf")
    #expect(text.contains("<include>/usr/share/dbus-1/system.conf</include>"))
    #expect(text.contains("<limit name=\"max_connections_per_user\">100000</limit>"))
    #expect(text.contains("<busconfig>") && text.contains("</busconfig>"))
  }

  @Test func withoutRootTheBusKeepsItsUser() {
    let system = """
      <busconfig>
        <type>system</type>
        <user>messagebus</user>
        <includedir>system.d</includedir>
      </busconfig>
      """
    let copy = DaemonConfiguration.systemBusWithoutUser(system)
    #expect(!copy.contains("<user>"))
    #expect(copy.contains("<includedir>/usr/share/dbus-1/system.d</includedir>"))
    #expect(copy.contains("<type>system</type>"))
  }

  @Test(arguments: [("         0          0 4294967295\n", true), ("         0       1000          1\n", false), ("", false)])
  func initialUserNamespace(map: String, initial: Bool) {
    #expect(DaemonConfiguration.isInitialUserNamespace(uidMap: map) == initial)
  }

  @Test func theIsolationVerdict() {
    let good = IsolationCheck(isRoot: true, canUnshare: true, machineNamespaceKnown: true, missingTools: [])
    #expect(good.verdict(noAvahi: false) == nil)
    var check = good
    check.canUnshare = false
    #expect(check.verdict(noAvahi: true)?.exitCode == 2)
    #expect(check.verdict(noAvahi: true)?.message.contains("needs root (or unprivileged user namespaces)") == true)
    check = good
    check.isRoot = false
    #expect(check.verdict(noAvahi: false)?.exitCode == 2)
    #expect(check.verdict(noAvahi: false)?.message.contains("avahi-daemon cannot run in an unprivileged user namespace") == true)
    #expect(check.verdict(noAvahi: true) == nil)
    check = good
    check.machineNamespaceKnown = false
    #expect(check.verdict(noAvahi: false)?.message == "cannot determine the machine's own network namespace (PID 1 and kthreadd unreadable)")
    check = good
    check.missingTools = ["avahi-daemon", "nsenter"]
    #expect(
      check.verdict(noAvahi: false)
        == LANError(.toolsMissing, "isolation is possible, but tools are missing: avahi-daemon nsenter (run scripts/install-deps)"))
  }

  @Test func aHostsCommandLineAndEnvironment() {
    let host = LANHost(
      id: "t1", name: "a", directory: "/run/nearby-lan/t1/a", namespace: "nb-t1-a", anchor: 4242, hostName: "t1-a",
      addresses: [.init(segment: 1, address: "10.77.1.1"), .init(segment: 2, address: "10.77.2.1")], harness: "/b/nearby-lan")
    #expect(
      host.entering(["nearby", "browse"], nsenter: "/usr/bin/nsenter", workingDirectory: "/src") == [
        "/usr/bin/nsenter", "-t", "4242", "-n", "-m", "--wd=/src", "--", "nearby", "browse",
      ])
    let environment = host.environment(["PATH": "/bin", "NEARBY_LAN": "outer"], extra: ["NEARBY_NAME": "a"])
    #expect(environment["NEARBY_LAN"] == "t1")
    #expect(environment["NEARBY_LAN_HOST"] == "a")
    #expect(environment["NEARBY_LAN_HOSTNAME"] == "t1-a")
    #expect(environment["NEARBY_LAN_ADDR"] == "10.77.1.1")
    #expect(environment["NEARBY_AVAHI"] == "1")
    #expect(environment["NEARBY_LAN_SCRIPT"] == "/b/nearby-lan")
    #expect(environment["NEARBY_NAME"] == "a" && environment["PATH"] == "/bin")
  }
}
