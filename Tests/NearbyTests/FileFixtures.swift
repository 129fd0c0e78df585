import Foundation
import Nearby
import NearbyCrypto
import NearbyTestSupport

#if canImport(Glibc)
  import Glibc
#endif

/// Real files for transfer tests: folders in /tmp, pseudo-random contents, BLAKE2b of what is
/// on disk.
enum FileFixtures {
  /// A fresh empty folder.
  static func folder(_ prefix: String = "nearby-files") -> String { Repository.temporaryDirectory(prefix) }

  /// Writes `size` pseudo-random bytes (from `seed`) to `path`, making its folders.
  static func write(_ path: String, size: Int, seed: UInt64 = 1) {
    try! FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
    precondition(fd >= 0, "cannot create \(path)")
    defer { close(fd) }
    var state = seed &* 0x9E37_79B9_7F4A_7C15 | 1
    var buffer = [UInt8](repeating: 0, count: 1 << 20)
    var left = size
    while left > 0 {
      let count = min(left, buffer.count)
      buffer.withUnsafeMutableBytes { raw in
        let words = raw.bindMemory(to: UInt64.self)
        for index in 0..<(count + 7) / 8 where index < words.count {
          state ^= state << 13
          state ^= state >> 7
          state ^= state << 17
          words[index] = state
        }
      }
      let written = buffer.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, count) }
      precondition(written == count)
      left -= count
    }
  }

  static func write(_ path: String, text: String) {
    try! FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
    _ = FileManager.default.createFile(atPath: path, contents: Data(text.utf8))
  }

  /// BLAKE2b-256 of a file, in hex (what `b2sum -l 256` prints).
  static func blake2b(_ path: String) -> String {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    precondition(fd >= 0, "cannot open \(path)")
    defer { close(fd) }
    let hasher = FileHasher()
    var buffer = [UInt8](repeating: 0, count: 1 << 20)
    while true {
      let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
      precondition(count >= 0)
      if count == 0 { break }
      buffer.withUnsafeBytes { hasher.update(UnsafeRawBufferPointer(rebasing: $0[0..<count])) }
    }
    return hasher.finalize().map { String(format: "%02x", $0) }.joined()
  }

  /// Every file and folder below `root`, relative, sorted (folders end with `/`).
  static func listing(_ root: String) -> [String] {
    guard let enumerator = FileManager.default.enumerator(atPath: root) else { return [] }
    var result: [String] = []
    while let path = enumerator.nextObject() as? String {
      var isDirectory: ObjCBool = false
      _ = FileManager.default.fileExists(atPath: root + "/" + path, isDirectory: &isDirectory)
      result.append(path + (isDirectory.boolValue ? "/" : ""))
    }
    return result.sorted()
  }

  static func size(_ path: String) -> Int? {
    (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? nil
  }

  static func remove(_ path: String) { try? FileManager.default.removeItem(atPath: path) }
}

extension RunningSession {
  /// Waits for an offer.
  func expectOffer(within timeout: Duration = .seconds(10)) async throws -> IncomingOffer {
    try await expect("offer", within: timeout) { if case .transfer(.offer(let offer)) = $0 { offer } else { nil } }
  }

  /// Waits for the end of transfer `id`.
  func expectEnd(of id: TransferID, within timeout: Duration = .seconds(30)) async throws -> (TransferEnd, [TransferredFile]) {
    try await expect("end of \(id.shortHex)", within: timeout) {
      if case .transfer(.finished(let found, _, _, let end, let files)) = $0, found == id { (end, files) } else { nil }
    }
  }
}
