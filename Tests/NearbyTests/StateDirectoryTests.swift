import Foundation
import NearbyTestSupport
import Testing

@testable import Nearby

#if canImport(Glibc)
  import Glibc
#endif

/// The state directory holds the identity's secret key: planted links, files of other
/// users, modes that let others write (or read the key), and a missing HOME are refused
/// with a message saying how to fix it, and nothing outside the directory is touched.
@Suite("The state directory is opened safely")
struct StateDirectoryTests {
  /// A fresh parent directory; the state directory is `parent/state` (not created yet).
  struct Place {
    let parent = Repository.temporaryDirectory("nearby-state")
    var state: String { parent + "/state" }
    func file(_ name: String) -> String { state + "/" + name }
  }

  static let isRoot = geteuid() == 0
  /// A user id that is not ours (nobody).
  static let otherUser: uid_t = 65534

  static func mode(_ path: String) -> mode_t {
    var info = stat()
    guard lstat(path, &info) == 0 else { return 0 }
    return info.st_mode & 0o777
  }

  static func contents(_ path: String) -> String? { try? String(contentsOfFile: path, encoding: .utf8) }

  static func write(_ text: String, to path: String, mode: mode_t = 0o600) {
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode)
    _ = text.withCString { Glibc.write(fd, $0, strlen($0)) }
    close(fd)
    chmod(path, mode)
  }

  /// Opens the identity expecting a refusal. - Returns: its message.
  static func refusal(_ directory: String) -> String? {
    do {
      let identity = try PeerIdentity(directory: directory)
      Issue.record("accepted \(directory) (peer \(identity.peerID.hex))")
      return nil
    } catch {
      return error.description
    }
  }

  /// A state directory made by a first run, then closed.
  static func existing() throws -> Place {
    let place = Place()
    _ = try PeerIdentity(directory: place.state)
    return place
  }

  // MARK: What a first run makes

  @Test func aNewDirectoryAndKeyAreForTheOwnerOnly() throws {
    let place = Place()
    let nested = place.state + "/deeper/still"
    let id: PeerID
    do {
      let identity = try PeerIdentity(directory: nested)
      id = identity.peerID
      #expect(Self.mode(place.state) == 0o700)
      #expect(Self.mode(nested) == 0o700)
      #expect(Self.mode(nested + "/identity") == 0o600)
      #expect(Self.mode(nested + "/lock") == 0o600)
      // Written atomically: no temporary file is left behind.
      let names = try FileManager.default.contentsOfDirectory(atPath: nested).sorted()
      #expect(names == ["identity", "lock"])
      #expect(Self.contents(nested + "/identity")?.contains("peer-id \(id.hex)") == true)
    }
    // The same identity next time.
    #expect(try PeerIdentity(directory: nested).peerID == id)
  }

  @Test func aTemporaryFileNamePlantedAsASymlinkIsNotFollowed() throws {
    let place = Place()
    mkdir(place.state, 0o700)
    let target = place.parent + "/target"
    Self.write("precious\n", to: target)
    symlink(target, place.file(".identity.\(getpid()).new"))
    let identity = try PeerIdentity(directory: place.state)
    #expect(Self.contents(target) == "precious\n")
    #expect(Self.contents(place.file("identity"))?.contains(identity.peerID.hex) == true)
  }

  // MARK: Planted files

  @Test func aLockPlantedAsASymlinkIsRefusedAndItsTargetIsUntouched() throws {
    let place = Place()
    mkdir(place.state, 0o700)
    let target = place.parent + "/victim"
    Self.write("do not overwrite\n", to: target)
    symlink(target, place.file("lock"))
    let message = try #require(Self.refusal(place.state))
    #expect(message.contains("refusing to use \(place.file("lock")): it is a symbolic link; remove it"))
    #expect(Self.contents(target) == "do not overwrite\n")
    // Also a dangling one: nothing is created at its target.
    unlink(place.file("lock"))
    symlink(place.parent + "/created-by-nearby", place.file("lock"))
    #expect(Self.refusal(place.state)?.contains("symbolic link") == true)
    #expect(access(place.parent + "/created-by-nearby", F_OK) != 0)
  }

  @Test func aLockWithASecondNameIsRefusedAndNotTruncated() throws {
    let place = Place()
    mkdir(place.state, 0o700)
    let target = place.parent + "/elsewhere"
    Self.write("keep me\n", to: target)
    link(target, place.file("lock"))
    #expect(Self.refusal(place.state)?.contains("hard links") == true)
    #expect(Self.contents(target) == "keep me\n")
  }

  @Test func aKeyFilePlantedAsASymlinkIsRefused() throws {
    let place = Place()
    mkdir(place.state, 0o700)
    let attacker = try Self.existing()
    symlink(attacker.file("identity"), place.file("identity"))
    let message = try #require(Self.refusal(place.state))
    #expect(message.contains("\(place.file("identity")): it is a symbolic link; remove it"))
  }

  @Test(.enabled(if: isRoot, "needs root to give a file to another user"))
  func aKeyFileOfAnotherUserIsRefused() throws {
    let place = try Self.existing()
    chown(place.file("identity"), Self.otherUser, Self.otherUser)
    let message = try #require(Self.refusal(place.state))
    #expect(message.contains("\(place.file("identity")): it belongs to user id \(Self.otherUser), not to you (\(geteuid()))"))
  }

  @Test(.enabled(if: isRoot, "needs root to give a file to another user"))
  func aLockOfAnotherUserIsRefused() throws {
    let place = try Self.existing()
    chown(place.file("lock"), Self.otherUser, Self.otherUser)
    #expect(Self.refusal(place.state)?.contains("belongs to user id \(Self.otherUser)") == true)
  }

  @Test func aKeyFileThatIsNotARegularFileIsRefused() throws {
    let place = Place()
    mkdir(place.state, 0o700)
    mkdir(place.file("identity"), 0o700)
    #expect(Self.refusal(place.state)?.contains("it is not a regular file") == true)
  }

  @Test func aPlantedVersion1IDIsNotUsed() throws {
    let place = Place()
    mkdir(place.state, 0o700)
    let planted = "0123456789abcdef0123456789abcdef"
    Self.write(planted + "\n", to: place.file("peer-id"))
    let identity = try PeerIdentity(directory: place.state)
    #expect(identity.peerID.hex != planted)
    #expect(identity.notice?.contains("replaces \(planted)") == true)
    #expect(access(place.file("peer-id"), F_OK) != 0)
  }

  // MARK: Modes

  @Test("a directory others may write to is refused", arguments: [0o770, 0o707, 0o777, 0o1777] as [mode_t])
  func writableDirectory(_ mode: mode_t) throws {
    let place = try Self.existing()
    chmod(place.state, mode)
    let message = try #require(Self.refusal(place.state))
    #expect(message.contains("refusing to use \(place.state): others may write to it"))
    #expect(message.contains("run chmod 700 \(place.state)"))
    chmod(place.state, 0o700)
    _ = try PeerIdentity(directory: place.state)
  }

  @Test(.enabled(if: isRoot, "needs root to give a directory to another user"))
  func aDirectoryOfAnotherUserIsRefused() throws {
    let place = try Self.existing()
    chown(place.state, Self.otherUser, Self.otherUser)
    let message = try #require(Self.refusal(place.state))
    #expect(message.contains("it belongs to user id \(Self.otherUser)"))
    #expect(message.contains("use a state directory of your own"))
  }

  @Test func aDirectoryThatIsASymlinkIsRefused() throws {
    let real = try Self.existing()
    let place = Place()
    symlink(real.state, place.state)
    #expect(Self.refusal(place.state)?.contains("symbolic link or not a directory") == true)
  }

  @Test("a key file others may read is refused", arguments: [0o640, 0o604, 0o644] as [mode_t])
  func readableKey(_ mode: mode_t) throws {
    let place = try Self.existing()
    chmod(place.file("identity"), mode)
    let message = try #require(Self.refusal(place.state))
    #expect(message.contains("others may read it (mode \(String(mode, radix: 8))): the key may be known to them"))
    #expect(message.contains("run chmod 600 \(place.file("identity")); otherwise delete it"))
  }

  @Test("a key file others may write to is refused", arguments: [0o620, 0o602, 0o666] as [mode_t])
  func writableKey(_ mode: mode_t) throws {
    let place = try Self.existing()
    chmod(place.file("identity"), mode)
    let message = try #require(Self.refusal(place.state))
    #expect(message.contains("others may write to it (mode \(String(mode, radix: 8))): the key may have been replaced"))
  }

  @Test func aLockOthersMayWriteToIsRefused() throws {
    let place = try Self.existing()
    chmod(place.file("lock"), 0o666)
    #expect(Self.refusal(place.state)?.contains("run chmod 600 \(place.file("lock"))") == true)
  }

  // MARK: Where it is

  @Test func withoutHOMEThereIsNoDefaultDirectoryAndNoFallbackIntoTmp() throws {
    #expect(throws: IdentityError.noHome) { try PeerIdentity.defaultDirectory(environment: [:]) }
    #expect(throws: IdentityError.noHome) { try PeerIdentity.defaultDirectory(environment: ["HOME": "relative/home"]) }
    #expect(throws: IdentityError.noHome) { try PeerIdentity.defaultDirectory(environment: ["XDG_STATE_HOME": "relative", "NEARBY_STATE_DIR": ""]) }
    #expect(IdentityError.noHome.description.contains("set one of them, or give a state directory"))
    #expect(try PeerIdentity.defaultDirectory(environment: ["HOME": "/home/a"]) == "/home/a/.local/state/nearby")
    #expect(try PeerIdentity.defaultDirectory(environment: ["HOME": "/home/a", "XDG_STATE_HOME": "/x"]) == "/x/nearby")
    #expect(try PeerIdentity.defaultDirectory(environment: ["HOME": "/home/a", "NEARBY_STATE_DIR": "/s"]) == "/s")
  }

  @Test func theChatWithoutHOMESaysSoAndExits1() async throws {
    let (status, output) = try await run([
      "/usr/bin/env", "-u", "HOME", "-u", "XDG_STATE_HOME", "-u", "NEARBY_STATE_DIR", Repository.nearby, "chat", "--plain", "--name", "x",
    ])
    #expect(status == 1)
    #expect(output.contains("there is no state directory: HOME is not set"), "\(output)")
    #expect(output.contains("--state-dir DIR or NEARBY_STATE_DIR"))
  }
}
