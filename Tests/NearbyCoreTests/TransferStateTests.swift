import NearbyCore
import Testing

/// The two sides of a transfer as values, driven by hand (PROTOCOL.md 13.3).
@Suite("Transfer state machines")
struct TransferStateTests {
  static let id = TransferID(hex: "3fa9c2d1e0b14f5a8c7d6e5f40312233")!
  static let files = [OfferedFile(name: "a.bin", size: 300), OfferedFile(name: "empty", size: 0), OfferedFile(name: "b.bin", size: 50)]
  static let hash = [UInt8](repeating: 7, count: 32)

  static func sender(window: UInt64 = 200) -> OutgoingTransferState {
    OutgoingTransferState(id: id, peer: PeerID(high: 1, low: 2), files: files, window: window, now: .zero)
  }

  static func receiver(limit: UInt64 = 1 << 20) -> IncomingTransferState {
    IncomingTransferState(id: id, peer: PeerID(high: 1, low: 2), files: files, pendingLimit: limit)
  }

  @Test func theSenderGoesFileByFileWithinItsWindowUntilEveryFileIsVerified() {
    var sender = Self.sender()
    var actions: [OutgoingTransferState.Action] = []
    sender.receive(.accept([AcceptedFile(index: 0), AcceptedFile(index: 1), AcceptedFile(index: 2)]), now: .seconds(1), into: &actions)
    #expect(actions == [.progress, .read(index: 0, offset: 0)])
    #expect(sender.mayStart(index: 0, offset: 0))
    sender.sent(index: 0, count: 100)
    sender.sent(index: 0, count: 100)
    #expect(!sender.windowHasRoom(for: 100))
    actions = []
    sender.receive(.ack(index: 0, offset: 150), now: .seconds(2), into: &actions)
    #expect(actions == [.progress])
    #expect(sender.windowHasRoom(for: 100))
    sender.sent(index: 0, count: 100)
    actions = []
    sender.fileRead(index: 0, hash: Self.hash, into: &actions)
    #expect(actions == [.send(.end(index: 0, size: 300, hash: Self.hash)), .read(index: 1, offset: 0)])
    actions = []
    sender.fileRead(index: 1, hash: Self.hash, into: &actions)
    #expect(actions == [.send(.end(index: 1, size: 0, hash: Self.hash)), .read(index: 2, offset: 0)])
    sender.sent(index: 2, count: 50)
    actions = []
    sender.fileRead(index: 2, hash: Self.hash, into: &actions)
    #expect(actions.first == .send(.end(index: 2, size: 50, hash: Self.hash)))
    for index in [0, 1] as [UInt16] { sender.receive(.verified(index: index), now: .seconds(3), into: &actions) }
    #expect(!sender.isFinished)
    actions = []
    sender.receive(.verified(index: 2), now: .seconds(3), into: &actions)
    #expect(actions.last == .finished(.completed))
    #expect(sender.totals == (350, 350))
  }

  @Test func resendAndStallsRewindToWhatTheReceiverHas() {
    var sender = Self.sender(window: 1000)
    var actions: [OutgoingTransferState.Action] = []
    sender.receive(.accept([AcceptedFile(index: 0, offset: 20)]), now: .zero, into: &actions)
    #expect(actions.last == .read(index: 0, offset: 20))
    sender.sent(index: 0, count: 200)
    actions = []
    sender.receive(.resend(index: 0, offset: 120), now: .seconds(1), into: &actions)
    #expect(actions == [.read(index: 0, offset: 120)])
    #expect(sender.mayStart(index: 0, offset: 120))
    sender.sent(index: 0, count: 100)
    actions = []
    sender.tick(now: .seconds(3), stall: .seconds(5), into: &actions)
    #expect(actions.isEmpty)
    sender.tick(now: .seconds(7), stall: .seconds(5), into: &actions)
    #expect(actions == [.read(index: 0, offset: 20)])
    #expect(sender.bytesSent == 300)
  }

  @Test func anAcceptAfterABreakResumesAndSkipsWhatTheReceiverHas() {
    var sender = Self.sender()
    var actions: [OutgoingTransferState.Action] = []
    sender.receive(.accept([AcceptedFile(index: 0)]), now: .zero, into: &actions)
    sender.sent(index: 0, count: 100)
    sender.routeLost()
    #expect(!sender.mayStart(index: 0, offset: 100))
    actions = []
    sender.receive(.accept([AcceptedFile(index: 0, status: .have, offset: 300), AcceptedFile(index: 2, offset: 10)]), now: .zero, into: &actions)
    #expect(actions == [.progress, .read(index: 2, offset: 10)])
    #expect(sender.status[1] == .notWanted)
  }

  @Test func aReceiverThatHasEverythingEndsTheTransferAtOnce() {
    var sender = Self.sender()
    var actions: [OutgoingTransferState.Action] = []
    sender.receive(.accept([AcceptedFile(index: 0, status: .have, offset: 300)]), now: .zero, into: &actions)
    #expect(actions.last == .finished(.completed))
  }

  @Test func framesOutsideTheOfferFailTheTransfer() {
    var sender = Self.sender()
    var actions: [OutgoingTransferState.Action] = []
    sender.receive(.accept([AcceptedFile(index: 9)]), now: .zero, into: &actions)
    guard case .send(.cancel(.invalid, _)) = actions.first else {
      Issue.record("\(actions)")
      return
    }
    #expect(sender.isFinished)
  }

  @Test func theReceiverTakesBytesOnlyInOrderAndNeverBeyondTheOfferedSize() {
    var receiver = Self.receiver()
    var actions: [IncomingTransferState.Action] = []
    receiver.accepted()
    receiver.prepared([0: 0, 1: 0, 2: 0], into: &actions)
    let data = [UInt8](repeating: 1, count: 100)
    actions = []
    receiver.receive(.chunk(index: 0, offset: 0, data: data), now: .zero, into: &actions)
    #expect(actions == [.write(index: 0, offset: 0, data: data)])
    actions = []
    receiver.receive(.chunk(index: 0, offset: 0, data: data), now: .zero, into: &actions)
    #expect(actions.isEmpty)  // a copy
    receiver.receive(.chunk(index: 0, offset: 200, data: data), now: .seconds(1), into: &actions)
    #expect(actions == [.send(.resend(index: 0, offset: 100))])
    actions = []
    receiver.receive(.chunk(index: 0, offset: 200, data: data), now: .milliseconds(1500), into: &actions)
    #expect(actions.isEmpty)  // asked less than a second ago
    receiver.receive(.chunk(index: 0, offset: 50, data: data), now: .seconds(2), into: &actions)
    #expect(actions == [.write(index: 0, offset: 100, data: Array(data[50...]))])
    actions = []
    receiver.receive(.chunk(index: 0, offset: 150, data: [UInt8](repeating: 2, count: 151)), now: .seconds(2), into: &actions)
    guard case .send(.cancel(.integrity, let message)) = actions.first else {
      Issue.record("\(actions)")
      return
    }
    #expect(message.contains("more bytes of a.bin than the 300"))
  }

  @Test func theReceiverAcknowledgesAsItWritesAndVerifiesEachFile() {
    var receiver = Self.receiver()
    receiver.ackInterval = 100
    var actions: [IncomingTransferState.Action] = []
    receiver.accepted()
    receiver.prepared([0: 0, 2: nil], into: &actions)
    #expect(actions.first == .send(.accept([AcceptedFile(index: 0), AcceptedFile(index: 2, status: .have, offset: 50)])))
    receiver.receive(.chunk(index: 0, offset: 0, data: [UInt8](repeating: 0, count: 300)), now: .zero, into: &actions)
    actions = []
    receiver.wrote(index: 0, count: 60, into: &actions)
    #expect(actions == [.progress])
    receiver.wrote(index: 0, count: 60, into: &actions)
    #expect(actions.contains(.send(.ack(index: 0, offset: 120))))
    receiver.wrote(index: 0, count: 180, into: &actions)
    #expect(actions.contains(.send(.ack(index: 0, offset: 300))))
    actions = []
    receiver.receive(.end(index: 0, size: 300, hash: Self.hash), now: .zero, into: &actions)
    #expect(actions == [.check(index: 0, hash: Self.hash)])
    actions = []
    receiver.fileSaved(index: 0, into: &actions)
    #expect(actions.first == .send(.verified(index: 0)))
    #expect(actions.last == .finished(.completed))
  }

  @Test func anEndThatDisagreesWithTheOfferFailsAndOneThatComesEarlyAsksAgain() {
    var receiver = Self.receiver()
    var actions: [IncomingTransferState.Action] = []
    receiver.accepted()
    receiver.prepared([0: 0], into: &actions)
    actions = []
    receiver.receive(.end(index: 0, size: 300, hash: Self.hash), now: .zero, into: &actions)
    #expect(actions == [.send(.resend(index: 0, offset: 0))])
    actions = []
    receiver.receive(.end(index: 0, size: 299, hash: Self.hash), now: .seconds(5), into: &actions)
    guard case .send(.cancel(.integrity, _)) = actions.first else {
      Issue.record("\(actions)")
      return
    }
  }

  @Test func aSenderThatIgnoresTheWindowFailsTheTransfer() {
    var receiver = Self.receiver(limit: 150)
    var actions: [IncomingTransferState.Action] = []
    receiver.accepted()
    receiver.prepared([0: 0], into: &actions)
    receiver.receive(.chunk(index: 0, offset: 0, data: [UInt8](repeating: 0, count: 100)), now: .zero, into: &actions)
    actions = []
    receiver.receive(.chunk(index: 0, offset: 100, data: [UInt8](repeating: 0, count: 100)), now: .zero, into: &actions)
    guard case .send(.cancel(.invalid, _)) = actions.first else {
      Issue.record("\(actions)")
      return
    }
  }

  @Test func aReofferIsAnsweredWithWhereTheReceiverIs() {
    var receiver = Self.receiver()
    var actions: [IncomingTransferState.Action] = []
    receiver.accepted()
    receiver.prepared([0: 40, 2: 0], into: &actions)
    actions = []
    receiver.receive(.offer(Self.files), now: .zero, into: &actions)
    #expect(actions == [.send(.accept([AcceptedFile(index: 0, offset: 40), AcceptedFile(index: 2, offset: 0)]))])
    actions = []
    receiver.receive(.offer([OfferedFile(name: "other", size: 1)]), now: .zero, into: &actions)
    guard case .send(.cancel(.invalid, _)) = actions.first else {
      Issue.record("\(actions)")
      return
    }
  }

  @Test func refusingWhileAskingSendsRefused() {
    var receiver = Self.receiver()
    var actions: [IncomingTransferState.Action] = []
    receiver.cancel("no", into: &actions)
    #expect(actions == [.send(.cancel(.refused, "no")), .finished(.failed(.refused, "no"))])
  }
}
