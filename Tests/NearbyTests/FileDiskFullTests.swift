import Foundation
import Nearby
import NearbyTestSupport
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// A download folder on a small tmpfs, mounted in the private mount namespace of
/// `scripts/lan loopback` (never in this machine's own).
@Suite(
  "File transfers onto a full disk", .enabled(if: LAN.avahiAvailable && geteuid() == 0, "needs scripts/lan loopback (a private mount namespace)"))
struct FileDiskFullTests {
  /// A fresh tmpfs of `megabytes`, and a function that unmounts it.
  static func tmpfs(megabytes: Int) throws -> (String, @Sendable () -> Void) {
    let path = FileFixtures.folder("nearby-tmpfs")
    let status = mount("tmpfs", path, "tmpfs", 0, "size=\(megabytes)m,mode=0755")
    guard status == 0 else { throw WaitError(description: "mount tmpfs on \(path): errno \(errno)") }
    return (path, { _ = umount2(path, Int32(MNT_DETACH)) })
  }

  @Test func anOfferLargerThanTheFreeSpaceIsRefusedAndNothingIsWritten() async throws {
    let (disk, unmount) = try Self.tmpfs(megabytes: 4)
    defer { unmount() }
    let source = FileFixtures.folder()
    FileFixtures.write(source + "/large.bin", size: 6 << 20)
    let alice = try await RunningSession.start("alice")
    let bob = try await RunningSession.start("bob")
    try await connect(alice, bob)
    let transfer = try await alice.session.sendFiles(at: [source + "/large.bin"], to: bob.peer.id)
    let offer = try await bob.expectOffer()
    do {
      try await offer.accept(into: disk + "/inbox")
      Issue.record("accepted an offer that does not fit")
    } catch {
      guard case .noSpace(let message) = error else {
        Issue.record("\(error)")
        return
      }
      #expect(message.contains("not enough free space"), "\(message)")
    }
    guard case .failed(.noSpace, let message)? = await transfer.result() else {
      Issue.record("the sender was not told")
      return
    }
    #expect(message.contains("6.0 MiB"))
    #expect(FileFixtures.listing(disk).isEmpty, "\(FileFixtures.listing(disk))")
    try await alice.stop()
    try await bob.stop()
  }

  @Test func aDiskThatFillsUpDuringATransferFailsItClearlyAndThePartGoes() async throws {
    let (disk, unmount) = try Self.tmpfs(megabytes: 3)
    defer { unmount() }
    let source = FileFixtures.folder()
    FileFixtures.write(source + "/fills.bin", size: 6 << 20)
    let alice = try await RunningSession.start("alice")
    let bob = try await RunningSession.start("bob") { $0.transferTuning.checkFreeSpace = false }
    try await connect(alice, bob)
    let transfer = try await alice.session.sendFiles(at: [source + "/fills.bin"], to: bob.peer.id)
    try await bob.expectOffer().accept(into: disk)
    let (end, _) = try await bob.expectEnd(of: transfer.id)
    guard case .failed(.noSpace, let message) = end else {
      Issue.record("\(end)")
      return
    }
    #expect(message.contains("No space left on device") && message.contains("fills.bin"), "\(message)")
    guard case .failed(.noSpace, _)? = await transfer.result() else {
      Issue.record("the sender was not told")
      return
    }
    try await Task.sleep(for: .milliseconds(300))
    #expect(FileFixtures.listing(disk).isEmpty, "\(FileFixtures.listing(disk))")
    try await alice.stop()
    try await bob.stop()
  }
}
