import Testing

@testable import NearbyLab

@Suite("Faults: a host's packet rules and rate limits")
struct HostFaultsTests {
  @Test func theStateFileReadsBack() {
    let faults = HostFaults(lossPercent: 10, cut: ["10.77.1.3", "10.77.1.2"])
    #expect(faults.text == "loss 10\ncut 10.77.1.2\ncut 10.77.1.3\n")
    #expect(HostFaults(text: faults.text) == faults)
    #expect(HostFaults(text: "") == HostFaults())
    #expect(HostFaults(text: "loss 250\nbogus line\n").lossPercent == 100)
  }

  @Test func noFaultsRemovesTheTable() {
    #expect(HostFaults().nftablesScript == "table inet nearby_lab\ndelete table inet nearby_lab\n")
  }

  @Test func lossAndCutsOnTheSegmentInterfacesBothWays() {
    let script = HostFaults(lossPercent: 25, cut: ["10.77.1.2"]).nftablesScript
    #expect(script.hasPrefix("table inet nearby_lab\ndelete table inet nearby_lab\ntable inet nearby_lab {\n"))
    for rule in [
      "type filter hook input priority -10; policy accept;", "iifname \"seg*\" ip saddr { 10.77.1.2 } drop",
      "iifname \"seg*\" numgen random mod 100 < 25 drop", "type filter hook output priority -10; policy accept;",
      "oifname \"seg*\" ip daddr { 10.77.1.2 } drop", "oifname \"seg*\" numgen random mod 100 < 25 drop",
    ] {
      #expect(script.contains(rule), "\(rule)")
    }
    #expect(!HostFaults(cut: ["10.77.1.2"]).nftablesScript.contains("numgen"))
    #expect(!HostFaults(lossPercent: 5).nftablesScript.contains("saddr"))
  }

  @Test func rateLimits() {
    #expect(
      HostFaults.rateArguments(interface: "seg1", rate: FaultAction.Rate("1mbit")) == [
        "qdisc", "replace", "dev", "seg1", "root", "tbf", "rate", "1000000bit", "burst", "4096", "latency", "100ms",
      ])
    #expect(HostFaults.rateArguments(interface: "s1-h2", rate: FaultAction.Rate("1gbit"))[9] == "2500000", "20 ms at the rate")
    #expect(HostFaults.rateArguments(interface: "seg1", rate: nil) == ["qdisc", "del", "dev", "seg1", "root"])
  }

  @Test func theHarnessCommandLine() throws {
    #expect(try LANCommand.parse(["fault", "t1", "partition", "a,b", "c"]) == .fault(id: "t1", .partition(["a", "b"], ["c"])))
    #expect(try LANCommand.parse(["fault", "t1", "loss", "a", "5%"]) == .fault(id: "t1", .loss(host: "a", percent: 5)))
    #expect(try LANCommand.parse(["fault", "t1", "heal"]) == .fault(id: "t1", .healAll))
    #expect(throws: LANError.self) { try LANCommand.parse(["fault", "t1", "pause", "a"]) }
    #expect(throws: LANError.self) { try LANCommand.parse(["fault", "t1", "loss", "a"]) }
    #expect(throws: LANError.self) { try LANCommand.parse(["fault", "t1"]) }
  }
}
