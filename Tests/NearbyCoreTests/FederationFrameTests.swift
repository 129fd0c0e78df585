import NearbyCore
import Testing

/// The frames federation added (PROTOCOL.md 9.6): rosters whose entries carry sites, and the
/// new UNDELIVERABLE reasons.
@Suite("Federation frames")
struct FederationFrameTests {
  func decode(_ bytes: [UInt8]) throws -> Frame? {
    let decoder = FrameDecoder()
    decoder.append(bytes)
    return try decoder.next()
  }

  let entry = Frame.Roster.Entry(
    peer: Fixture.carol, hops: 3, publicKey: [UInt8](repeating: 7, count: 32), site: PeerSite(name: "site3", isOnline: false))

  @Test func aRosterWithSitesRoundTripsAndMarksItsKind() throws {
    let roster = Frame.Roster(kind: .add, entries: [entry], carriesSites: true)
    let bytes = FrameEncoder.encode(.roster(roster))
    // type, then the kind with bit 7: add | sites.
    #expect(bytes[4] == 0x0B && bytes[5] == 0x81)
    // Each entry ends with its site (str8) and presence (1: offline).
    #expect(Array(bytes.suffix(7)) == [5] + Array("site3".utf8) + [1])
    #expect(try decode(bytes) == .roster(roster))
  }

  @Test func aRosterWithoutSitesIsAsBeforeAndDropsThem() throws {
    let bytes = FrameEncoder.encode(.roster(Frame.Roster(kind: .full, entries: [entry])))
    #expect(bytes[5] == 0x00)
    var plain = entry
    plain.site = nil
    #expect(try decode(bytes) == .roster(Frame.Roster(kind: .full, entries: [plain])))
  }

  @Test func aSiteWithAControlCharacterOrAnUnknownKindIsMalformed() throws {
    var bytes = FrameEncoder.encode(.roster(Frame.Roster(kind: .add, entries: [entry], carriesSites: true)))
    bytes[bytes.count - 3] = 0x07
    #expect(throws: FrameDecodingError.self) { try decode(bytes) }
    var kind = FrameEncoder.encode(.roster(Frame.Roster(kind: .add, entries: [], carriesSites: true)))
    kind[5] = 0x83
    #expect(throws: FrameDecodingError.self) { try decode(kind) }
  }

  @Test func theNewReasonsHaveNames() {
    #expect(UndeliverableReason.queued.description == "queued")
    #expect(UndeliverableReason.expired.description == "expired")
    #expect(UndeliverableReason.storeFailed.description == "storeFailed")
    #expect(UndeliverableReason(rawValue: 9).description == "undeliverable (reason 9)")
  }

  /// People read the explanation: a cause in words, then the reason's name; where the
  /// sender can do something, it says what.
  @Test(arguments: [
    (1, "send again once it is reachable"), (2, "send again later"), (3, "check how they connect"), (4, "does not follow the protocol"),
    (5, "until the recipient connects"), (6, "age limit"), (7, "send again later"), (9, "updating Nearby may say more"),
  ])
  func everyReasonIsExplained(rawValue: UInt8, remedy: String) {
    let reason = UndeliverableReason(rawValue: rawValue)
    #expect(reason.explanation.hasSuffix(rawValue == 9 ? "; updating Nearby may say more (reason 9)" : " (\(reason.description))"))
    #expect(reason.explanation.contains(remedy))
    #expect(UndeliveredReason.remote(reason).description == reason.explanation)
  }
}
