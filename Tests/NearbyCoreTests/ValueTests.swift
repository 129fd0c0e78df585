import NearbyCore
import Testing

@Suite("Identifiers, names, service types and discovery info")
struct ValueTests {
  @Test func peerIDRoundTripsThroughHexAndBytes() throws {
    var generator = SeededGenerator(seed: 42)
    for _ in 0..<200 {
      let id = PeerID.random(using: &generator)
      #expect(id.isValid)
      #expect(id.hex.count == 32)
      #expect(PeerID(hex: id.hex) == id)
      #expect(PeerID(hex: id.hex.uppercased()) == id)
      #expect(PeerID(bytes: id.bytes) == id)
    }
  }

  @Test(
    "invalid peer id text",
    arguments: ["", "abc", String(repeating: "0", count: 32), String(repeating: "g", count: 32), String(repeating: "a", count: 33)])
  func invalidPeerIDs(_ text: String) {
    #expect(PeerID(hex: text) == nil)
  }

  @Test func peerIDsCompareAsBigEndianNumbers() {
    #expect(PeerID(hex: "00000000000000010000000000000000")! > PeerID(hex: "0000000000000000ffffffffffffffff")!)
    #expect(PeerID(hex: "0000000000000000000000000000000a")! < PeerID(hex: "0000000000000000000000000000000b")!)
  }

  /// Families of ids a peer could choose to crowd one bucket of a dictionary (what the
  /// low bits of the hash pick): each must spread over the buckets about as random ids do.
  /// 4 096 ids in 4 096 buckets fill about 63% of them at random; a hash that keeps the
  /// families' structure (the halves' xor or sum, a bit pattern in the top bits) fills a
  /// few.
  @Test("peer ids chosen with a pattern spread over a dictionary's buckets", arguments: IDPattern.allCases)
  func peerIDHashesSpread(_ pattern: IDPattern) {
    for seed in [0, 1, -1, 0x5eed] {
      var buckets = Set<Int>()
      for i in 0..<UInt64(4096) { buckets.insert(pattern.id(i)._rawHashValue(seed: seed) & 4095) }
      #expect(buckets.count > 2300, "\(pattern), seed \(seed): \(buckets.count) of 4096 buckets")
    }
  }

  enum IDPattern: CaseIterable, Sendable {
    case countingInTheLowHalf, countingInTheHighHalf, equalHalves, complementaryHalves, countingInTheTopBits, countingAboveTheLow32Bits

    func id(_ i: UInt64) -> PeerID {
      switch self {
      case .countingInTheLowHalf: PeerID(high: 0, low: i + 1)
      case .countingInTheHighHalf: PeerID(high: i + 1, low: 0)
      case .equalHalves: PeerID(high: i + 1, low: i + 1)
      case .complementaryHalves: PeerID(high: i, low: ~i)
      case .countingInTheTopBits: PeerID(high: i << 52, low: i << 52 | 1)
      case .countingAboveTheLow32Bits: PeerID(high: 7, low: i << 32)
      }
    }
  }

  /// Each dictionary hashes with a seed of its own (so that copying one into another does
  /// not go quadratic): under two seeds, random ids land in the same bucket about as often
  /// as chance says (1 in 4 096), not every time.
  @Test func peerIDHashesDependOnTheSeed() {
    var generator = SeededGenerator(seed: 11)
    var same = 0
    for _ in 0..<4096 {
      let id = PeerID.random(using: &generator)
      if id._rawHashValue(seed: 1) & 4095 == id._rawHashValue(seed: 2) & 4095 { same += 1 }
    }
    #expect(same < 16, "\(same) of 4096 ids in the same bucket under two seeds")
  }

  @Test func peerIDsWorkAsDictionaryKeys() {
    var generator = SeededGenerator(seed: 7)
    let ids = (0..<5000).map { _ in PeerID.random(using: &generator) }
    var table: [PeerID: Int] = [:]
    for (index, id) in ids.enumerated() { table[id] = index }
    #expect(table.count == ids.count)
    for (index, id) in ids.enumerated() {
      #expect(table[id] == index)
      #expect(table[PeerID(high: id.high, low: id.low)] == index)  // an equal value, made anew
      #expect(id._rawHashValue(seed: 3) == PeerID(bytes: id.bytes)!._rawHashValue(seed: 3))
    }
    #expect(table[PeerID(high: 0, low: 1)] == nil)
  }

  @Test(
    "valid display names", arguments: ["a", "alice", "Zoë", "日本語", "🦊 fox", String(repeating: "x", count: 63), String(repeating: "é", count: 31)])
  func validNames(_ name: String) throws {
    #expect(try DisplayName(name).value == name)
  }

  @Test(
    "invalid display names",
    arguments: [
      ("", DisplayNameError.empty),
      (String(repeating: "x", count: 64), .tooLong(byteCount: 64)),
      (String(repeating: "é", count: 32), .tooLong(byteCount: 64)),
      ("a\nb", .controlCharacter(0x0A)),
      ("\u{1B}[2J", .controlCharacter(0x1B)),
      ("x\u{85}", .controlCharacter(0x85)),
      ("del\u{7F}", .controlCharacter(0x7F)),
    ])
  func invalidNames(_ name: String, _ error: DisplayNameError) {
    #expect(throws: error) { try DisplayName(name) }
    #expect(error.description.contains(":"))  // says what to do
  }

  @Test func invalidUTF8NameIsRefused() {
    #expect(throws: DisplayNameError.invalidUTF8) { try DisplayName(utf8: [0x61, 0xC0, 0xAF]) }
  }

  @Test(
    "valid service types",
    arguments: [
      ("nearby-devices", "_nearby-devices._tcp"), ("_nearby-devices._tcp", "_nearby-devices._tcp"),
      ("_chat._tcp.", "_chat._tcp"), ("a", "_a._tcp"), ("a1-b2-c3", "_a1-b2-c3._tcp"), ("x23456789012345", "_x23456789012345._tcp"),
    ])
  func validServiceTypes(_ text: String, _ type: String) throws {
    #expect(try ServiceType(text).type == type)
  }

  @Test(
    "invalid service types",
    arguments: [
      "", "-abc", "abc-", "a--b", "123", "Nearby", "near_by", "x234567890123456", "_nearby._udp", "_nearby", "né",
    ])
  func invalidServiceTypes(_ text: String) {
    #expect(throws: ServiceTypeError.self) { try ServiceType(text) }
    do {
      _ = try ServiceType(text)
    } catch {
      #expect(error.description.contains("1-15 characters"))
    }
  }

  @Test func discoveryInfoRules() throws {
    var info = try DiscoveryInfo(arguments: ["room=kitchen", "url=http://x/?a=b", "empty="])
    #expect(info["room"] == "kitchen")
    #expect(info["ROOM"] == "kitchen")
    #expect(info["url"] == "http://x/?a=b")
    #expect(info["empty"] == "")
    try info.set("Room", to: "hall")
    #expect(info.count == 3)
    #expect(info["room"] == "hall")
    #expect(throws: DiscoveryInfoError.missingEquals("room")) { try DiscoveryInfo(arguments: ["room"]) }
    #expect(throws: DiscoveryInfoError.emptyKey) { try DiscoveryInfo(arguments: ["=x"]) }
    #expect(throws: DiscoveryInfoError.reservedKey("ID")) { try DiscoveryInfo(arguments: ["ID=1"]) }
    #expect(throws: DiscoveryInfoError.invalidKey("k\u{1}")) { try DiscoveryInfo([(key: "k\u{1}", value: "")]) }
    let long = String(repeating: "v", count: 252)
    _ = try DiscoveryInfo(arguments: ["ab=\(long)"])  // 255 bytes exactly
    #expect(throws: DiscoveryInfoError.entryTooLong("abc", byteCount: 256)) { try DiscoveryInfo(arguments: ["abc=\(long)"]) }
  }

  @Test func advertisementRoundTripsThroughTXT() throws {
    let info = try DiscoveryInfo(arguments: ["room=kitchen", "x=é=1"])
    let advertisement = PeerAdvertisement(peer: Fixture.alice, isRelay: true, info: info)
    let record = try advertisement.txtRecord()
    #expect(TXTRecord.parse(record)?.first == Array("id=\(Fixture.aliceID.hex)".utf8))
    #expect(try PeerAdvertisement.parse(txt: record).get() == advertisement)
  }

  @Test func advertisementRecordIsLimitedTo1300Bytes() throws {
    var info = DiscoveryInfo()
    for index in 0..<5 { try info.set("k\(index)", to: String(repeating: "v", count: 250)) }
    let advertisement = PeerAdvertisement(peer: Fixture.alice, info: info)
    #expect(throws: DiscoveryInfoError.self) { try advertisement.txtRecord() }
  }

  @Test(
    "TXT records that are not Nearby peers",
    arguments: [
      ([String](), AdvertisementError.missingKey("id")),
      (["name=x", "v=1"], .missingKey("id")),
      (["id=zz", "name=x", "v=1"], .invalidID),
      (["id=0000000000000000000000000000000a", "v=1"], .missingKey("name")),
      (["id=0000000000000000000000000000000a", "name=x"], .missingKey("v")),
      (["id=0000000000000000000000000000000a", "name=x", "v=0"], .invalidVersion),
      (["id=0000000000000000000000000000000a", "name=", "v=1"], .invalidName(.empty)),
    ])
  func foreignRecords(_ strings: [String], _ error: AdvertisementError) {
    let record = TXTRecord.encode(strings.map { Array($0.utf8) })
    #expect(PeerAdvertisement.parse(txt: record) == .failure(error))
  }

  @Test func malformedTXTAndDuplicateKeys() throws {
    #expect(PeerAdvertisement.parse(txt: [5, 0x61]) == .failure(.malformedRecord))
    let record = TXTRecord.encode(["id=0000000000000000000000000000000a", "name=x", "v=2", "v=9", "name=y"].map { Array($0.utf8) })
    let parsed = try PeerAdvertisement.parse(txt: record).get()
    #expect(parsed.protocolVersion == 2)
    #expect(parsed.peer.name.value == "x")
  }
}

/// A small deterministic generator (SplitMix64) for reproducible property tests.
struct SeededGenerator: RandomNumberGenerator {
  var state: UInt64
  init(seed: UInt64) { state = seed }
  mutating func next() -> UInt64 {
    state &+= 0x9E37_79B9_7F4A_7C15
    var z = state
    z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
    z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
    return z ^ (z >> 31)
  }
}
