import NearbyLab
import Testing

@Suite("Harness: the plan of hosts, segments, names and addresses")
struct LANTopologyTests {
  @Test func twoSegmentsJoinedByOneHost() throws {
    let lan = try LANTopology(id: "t2", segments: ["a,r", "r,c"])
    #expect(lan.segments == [["a", "r"], ["r", "c"]])
    #expect(lan.hosts.map(\.name) == ["a", "r", "c"])
    #expect(lan.hosts.map(\.index) == [1, 2, 3])
    #expect(lan.hosts.map(\.namespace) == ["nb-t2-a", "nb-t2-r", "nb-t2-c"])
    #expect(lan.hosts.map(\.hostName) == ["t2-a", "t2-r", "t2-c"])
    #expect(lan.bridgeNamespace == "nbbr-t2")
    #expect(lan.namespaces == ["nbbr-t2", "nb-t2-a", "nb-t2-r", "nb-t2-c"])
    let r = try #require(lan.host("r"))
    #expect(r.links.map(\.segment) == [1, 2])
    #expect(r.links.map(\.interface) == ["seg1", "seg2"])
    #expect(r.links.map(\.bridgePort) == ["s1-h2", "s2-h2"])
    #expect(r.links.map(\.address) == ["10.77.1.2", "10.77.2.2"])
    #expect(lan.host("c")?.links.map(\.address) == ["10.77.2.3"])
  }

  @Test func theIPCommands() throws {
    let lan = try LANTopology(id: "t1", segments: ["a,b"])
    #expect(lan.namespaceCommands == ["netns add nbbr-t1", "netns add nb-t1-a", "netns add nb-t1-b"])
    #expect(
      lan.bridgeCommands == [
        "link set lo up",
        "link add br1 type bridge stp_state 0 mcast_snooping 0",
        "link set br1 up",
        "link add s1-h1 type veth peer name seg1 netns nb-t1-a",
        "link set s1-h1 master br1 up",
        "link add s1-h2 type veth peer name seg1 netns nb-t1-b",
        "link set s1-h2 master br1 up",
      ])
    #expect(
      lan.hostCommands(lan.hosts[1]) == ["link set lo up", "addr add 10.77.1.2/24 dev seg1", "link set seg1 multicast on up"])
  }

  @Test(
    arguments: [
      (["a,b"], "t-1", nil),
      ([], "t1", "usage: lan up ID SEGMENT [SEGMENT...]"),
      (["a,b"], "-t", "bad LAN ID '-t': use 1-32 letters, digits and '-' (not at either end)"),
      (["a,b"], "t-", "bad LAN ID 't-': use 1-32 letters, digits and '-' (not at either end)"),
      (
        ["a,b"], String(repeating: "x", count: 33),
        "bad LAN ID '\(String(repeating: "x", count: 33))': use 1-32 letters, digits and '-' (not at either end)"
      ),
      (["a,b"], "loopback", "'loopback' is reserved"),
      (["a,,b"], "t1", "bad segment 'a,,b' (expected e.g. a,b)"),
      ([",a"], "t1", "bad segment ',a' (expected e.g. a,b)"),
      (["a,"], "t1", "bad segment 'a,' (expected e.g. a,b)"),
      ([""], "t1", "bad segment '' (expected e.g. a,b)"),
      (["a,b-c"], "t1", "bad host name 'b-c': use 1-24 letters and digits"),
      (["a,b,a"], "t1", "host a appears twice in segment 1"),
      (Array(repeating: "a", count: 251), "t1", "too many segments (max 250)"),
    ] as [([String], String, String?)])
  func validation(segments: [String], id: String, message: String?) {
    do throws(LANError) {
      _ = try LANTopology(id: id, segments: segments)
      #expect(message == nil)
    } catch {
      #expect(error.message == message)
      #expect(error.exitCode == 64)
    }
  }

  @Test func atMost254Hosts() {
    let many = (1...255).map { "h\($0)" }.joined(separator: ",")
    #expect(throws: LANError.usage("too many hosts (max 254)")) { try LANTopology(id: "t", segments: [many]) }
  }

  @Test(arguments: [
    ("nbbr-t1", "t1", true), ("nb-t1-a", "t1", true), ("nb-t1-a-b", "t1", false), ("nb-t1-", "t1", false), ("nb-t10-a", "t1", false),
    ("nb-t1-a", "t1-a", false), ("nb-t1-a-b", "t1-a", true), ("other", "t1", false),
  ])
  func namespacesOfALAN(name: String, id: String, belongs: Bool) {
    #expect(LANTopology.isNamespace(name, of: id) == belongs)
  }

  @Test func theStateFiles() throws {
    let lan = try LANTopology(id: "t2", segments: ["a,r", "r,c"])
    let files = Dictionary(uniqueKeysWithValues: LANStateLayout.lanFiles(lan).map { ($0.name, $0.text) })
    #expect(files == ["hosts": "a\nr\nc\n", "segments": "1 a r\n2 r c\n"])
    let r = Dictionary(uniqueKeysWithValues: LANStateLayout.hostFiles(lan.hosts[1]).map { ($0.name, $0.text) })
    #expect(r == ["netns": "nb-t2-r\n", "index": "2\n", "hostname": "t2-r\n", "ifaces": "seg1,seg2\n", "addrs": "1 10.77.1.2\n2 10.77.2.2\n"])
    #expect(LANStateLayout.addresses(r["addrs"]!).map(\.address) == ["10.77.1.2", "10.77.2.2"])
    #expect(LANStateLayout.addresses(r["addrs"]!).map(\.segment) == [1, 2])
    #expect(LANStateLayout.segments(files["segments"]!) == [["a", "r"], ["r", "c"]])
    #expect(LANStateLayout.hostDirectory("t2", "r") == "/run/nearby-lan/t2/r")
  }
}
