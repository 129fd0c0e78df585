import Nearby
import NearbyCore
import NearbyFederation
import NearbyLab
import Testing

@Suite("Federation values: presence records, delivery metadata, cluster configuration")
struct FederationValueTests {
  let alice = Peer(id: PeerID(hex: "933af21c0e5a6d8b2f4c7e9a1b3d5f70")!, name: try! DisplayName("alice smith 🌷"))
  let relay = PeerID(hex: "5e6f7a8b5e6f7a8b5e6f7a8b5e6f7a8b")!

  @Test func aPresenceRecordRoundTripsAsReadableText() throws {
    let key = (0..<32).map { UInt8($0 * 7 & 0xFF) }
    let record = PresenceRecord(peer: alice, publicKey: key, site: "hq-2", relay: relay, isOnline: true)
    let text = String(decoding: record.encoded, as: UTF8.self)
    #expect(text.hasPrefix("nearby-presence 1\nid 933af21c0e5a6d8b2f4c7e9a1b3d5f70\nname alice smith 🌷\nkey 00070e15"))
    #expect(text.contains("\nsite hq-2\nrelay 5e6f7a8b5e6f7a8b5e6f7a8b5e6f7a8b\nstate online\n"))
    #expect(PresenceRecord(record.encoded) == record)
    var offline = record
    offline.isOnline = false
    #expect(PresenceRecord(offline.encoded)?.isOnline == false)
    #expect(PresenceRecord.key(alice.id) == "peer.933af21c0e5a6d8b2f4c7e9a1b3d5f70")
    #expect(PresenceRecord.peerID(key: "peer.933af21c0e5a6d8b2f4c7e9a1b3d5f70") == alice.id)
    #expect(PresenceRecord.peerID(key: "other.933af21c0e5a6d8b2f4c7e9a1b3d5f70") == nil)
  }

  @Test(
    "what is not a presence record is refused",
    arguments: [
      "", "nearby-presence 2\n",
      "nearby-presence 1\nid 933af21c0e5a6d8b2f4c7e9a1b3d5f70\nname alice\nkey 00\nsite a\nrelay 5e6f7a8b5e6f7a8b5e6f7a8b5e6f7a8b\nstate online\n",
      "nearby-presence 1\nid 933af21c\nname alice\nkey \(String(repeating: "ab", count: 32))\nsite a\nrelay 5e6f7a8b5e6f7a8b5e6f7a8b5e6f7a8b\nstate online\n",
      "nearby-presence 1\nid 933af21c0e5a6d8b2f4c7e9a1b3d5f70\nname alice\nkey \(String(repeating: "ab", count: 32))\nsite a\nrelay 5e6f7a8b5e6f7a8b5e6f7a8b5e6f7a8b\nstate away\n",
      "nearby-presence 1\nid 933af21c0e5a6d8b2f4c7e9a1b3d5f70\nkey \(String(repeating: "ab", count: 32))\nsite a\nrelay 5e6f7a8b5e6f7a8b5e6f7a8b5e6f7a8b\nstate online\n",
    ])
  func malformedPresence(text: String) {
    #expect(PresenceRecord(Array(text.utf8)) == nil)
  }

  @Test func theReplySubjectOfAJetStreamDeliveryGivesItsSequenceAndTime() throws {
    let old = try #require(JetStreamDelivery(replySubject: "$JS.ACK.NEARBY.peer-abc.2.1234.17.1700000000123456789.5"))
    #expect(old.stream == "NEARBY" && old.consumer == "peer-abc" && old.deliveries == 2 && old.streamSequence == 1234)
    #expect(old.timestamp == 1_700_000_000_123_456_789)
    let new = try #require(JetStreamDelivery(replySubject: "$JS.ACK.hub.ACCHASH.NEARBY.peer-abc.1.99.3.1700000000000000000.0.token"))
    #expect(new.stream == "NEARBY" && new.consumer == "peer-abc" && new.deliveries == 1 && new.streamSequence == 99)
    #expect(JetStreamDelivery(replySubject: "_INBOX.abc") == nil)
    #expect(JetStreamDelivery(replySubject: "$JS.ACK.NEARBY.peer.x.1.2.3") == nil)
    // A time before 1970 is no server's: a core publish by another site can carry any reply
    // subject, and the age of Int64.min nanoseconds trapped the relay.
    #expect(JetStreamDelivery(replySubject: "$JS.ACK.NEARBY.c.1.1.1.-9223372036854775808.0") == nil)
    #expect(JetStreamDelivery(replySubject: "$JS.ACK.NEARBY.c.1.1.1.-1.0") == nil)
  }

  @Test func subjectsAndNamesFollowThePeerIDs() {
    let configuration = FederationConfiguration(nats: NATSSettings(servers: ["nats://127.0.0.1:4222"], name: "r"), site: "hq")
    #expect(configuration.subject(for: alice.id) == "nearby.v2.peer.933af21c0e5a6d8b2f4c7e9a1b3d5f70")
    #expect(
      configuration.deliverSubject(relay: relay, peer: alice.id)
        == "nearby.v2.deliver.5e6f7a8b5e6f7a8b5e6f7a8b5e6f7a8b.933af21c0e5a6d8b2f4c7e9a1b3d5f70")
    #expect(configuration.consumer(for: alice.id) == "peer-933af21c0e5a6d8b2f4c7e9a1b3d5f70")
    #expect(configuration.streamSettings.subjects == ["nearby.v2.peer.*"])
    #expect(FederationConfiguration.isValidSite("hq-2.east_1"))
    for bad in ["", "h q", "héllo", String(repeating: "a", count: 64), "a/b"] { #expect(!FederationConfiguration.isValidSite(bad), "\(bad)") }
  }

  @Test func aClusterPlanGivesEveryNodeRoutesToAllOfThem() {
    let plan = NATSClusterPlan(host: "127.0.0.1", clientPorts: [4222, 4223, 4224], clusterPorts: [6222, 6223, 6224], directory: "/tmp/js")
    #expect(plan.clientURLs == ["nats://127.0.0.1:4222", "nats://127.0.0.1:4223", "nats://127.0.0.1:4224"])
    let second = plan.configuration(1)
    #expect(second.contains("server_name: n2\nlisten: 127.0.0.1:4223\njetstream { store_dir: \"/tmp/js/n2\" }"))
    #expect(
      second.contains(
        "cluster {\n  name: nearby\n  listen: 127.0.0.1:6223\n  routes: [nats://127.0.0.1:6222, nats://127.0.0.1:6223, nats://127.0.0.1:6224]\n}"))
    var single = NATSClusterPlan(host: "127.0.0.1", clientPorts: [4222], clusterPorts: [6222], directory: "/tmp/js")
    #expect(!single.configuration(0).contains("cluster"))
    #expect(!single.configuration(0).contains("tls"))
    single.tls = NATSTLSFiles(certificate: "/tmp/js/server.pem", key: "/tmp/js/server.key")
    #expect(single.configuration(0).contains("tls {\n  cert_file: \"/tmp/js/server.pem\"\n  key_file: \"/tmp/js/server.key\"\n}"))
  }

  @Test func labHostsGetEveryHostsAddresses() {
    let variables = LabPlan.addressVariables(["n1": [(4, "10.77.4.7")], "r1": [(4, "10.77.4.2"), (1, "10.77.1.2")]])
    #expect(variables["NEARBY_LAB_ADDR_n1"] == "10.77.4.7")
    #expect(variables["NEARBY_LAB_ADDR_r1"] == "10.77.1.2", "the first segment's")
    #expect(variables["NEARBY_LAB_ADDR_r1_4"] == "10.77.4.2")
    #expect(variables["NEARBY_LAB_ADDR_r1_1"] == "10.77.1.2" && variables.count == 5)
  }
}
