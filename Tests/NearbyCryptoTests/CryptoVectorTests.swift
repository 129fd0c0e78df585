import Foundation
import Testing

@testable import NearbyCrypto

@Suite("Protocol/vectors/crypto.json")
struct CryptoVectorTests {
  static let file = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    .appendingPathComponent("Protocol/vectors/crypto.json")

  static func serialize(_ object: Any) throws -> Data {
    var data = try JSONSerialization.data(withJSONObject: object, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes])
    data.append(0x0A)
    return data
  }

  /// `NEARBY_WRITE_VECTORS=1 swift test --filter CryptoVectorTests` rewrites the file.
  @Test("the file is exactly what the code produces now (set NEARBY_WRITE_VECTORS=1 to regenerate)")
  func matches() throws {
    try #require(RecordCipher.aes256GCM.isAvailable, "the vectors include AES-256-GCM, which this CPU lacks")
    let generated = CryptoVectors.generate()
    if ProcessInfo.processInfo.environment["NEARBY_WRITE_VECTORS"] == "1" {
      try Self.serialize(generated).write(to: Self.file)
    }
    let stored = try JSONSerialization.jsonObject(with: Data(contentsOf: Self.file))
    let fresh = try JSONSerialization.jsonObject(with: Self.serialize(generated))
    let differences = Self.differences(stored, fresh, path: "")
    #expect(differences.isEmpty, "crypto.json differs from the code at: \(differences.prefix(10).joined(separator: ", "))")
  }

  @Test("the vector file exercises what it claims: a key change, both ciphers, every failure")
  func coverage() throws {
    let object = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: Self.file)) as? [String: Any])
    let records = try #require(object["records"] as? [[String: Any]])
    let epochs = Set(records.flatMap { ($0["records"] as! [[String: Any]]).map { $0["epoch"] as! String } })
    #expect(epochs.count >= 3)
    #expect(Set(records.map { $0["cipher"] as! String }) == ["ChaCha20-Poly1305", "AES-256-GCM"])
    let handshakes = try #require(object["handshakes"] as? [[String: Any]])
    #expect(Set(handshakes.map { $0["cipher"] as! String }) == ["ChaCha20-Poly1305", "AES-256-GCM"])
    let failures = try #require(object["recordFailures"] as? [[String: Any]])
    #expect(Set(failures.map { $0["error"] as! String }) == ["decryptFailed", "truncated", "dataAfterClose", "recordTooLarge", "malformedRecord"])
  }

  static func differences(_ a: Any, _ b: Any, path: String) -> [String] {
    switch (a, b) {
    case (let a as [String: Any], let b as [String: Any]):
      return Set(a.keys).union(b.keys).sorted().flatMap { key -> [String] in
        guard let left = a[key], let right = b[key] else { return ["\(path)/\(key) (missing on one side)"] }
        return differences(left, right, path: "\(path)/\(key)")
      }
    case (let a as [Any], let b as [Any]):
      guard a.count == b.count else { return ["\(path) (\(a.count) vs \(b.count) elements)"] }
      return zip(a, b).enumerated().flatMap { differences($1.0, $1.1, path: "\(path)[\($0)]") }
    default:
      return "\(a)" == "\(b)" ? [] : [path]
    }
  }
}
