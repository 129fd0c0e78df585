import Foundation
import NearbyCore
import Testing

/// The test vectors of `Protocol/vectors/`, read from the repository.
enum Vectors {
  struct Valid: Sendable, CustomTestStringConvertible {
    let name: String
    let bytes: [UInt8]
    let frame: Frame
    var testDescription: String { name }
  }

  struct Invalid: Sendable, CustomTestStringConvertible {
    let name: String
    let bytes: [UInt8]
    let error: String
    var testDescription: String { name }
  }

  static let directory = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    .appendingPathComponent("Protocol/vectors")

  nonisolated(unsafe) private static let frames: [String: Any] = {
    let data = try! Data(contentsOf: directory.appendingPathComponent("frames.json"))
    return try! JSONSerialization.jsonObject(with: data) as! [String: Any]
  }()

  static let valid: [Valid] = (frames["valid"] as! [[String: Any]]).map { entry in
    Valid(name: entry["name"] as! String, bytes: hex(entry["hex"] as! String), frame: frame(entry["frame"] as! [String: Any]))
  }

  static let invalid: [Invalid] = (frames["invalid"] as! [[String: Any]]).map { entry in
    Invalid(name: entry["name"] as! String, bytes: hex(entry["hex"] as! String), error: entry["error"] as! String)
  }

  static let maxFrameLength = frames["maxFrameLength"] as! Int

  /// The legal-frames table of PROTOCOL.md section 5.2.
  static let legalFrames: [String: Set<FrameType>] = {
    let data = try! Data(contentsOf: directory.appendingPathComponent("states.json"))
    let object = try! JSONSerialization.jsonObject(with: data) as! [String: Any]
    let states = object["states"] as! [String: [String]]
    return states.mapValues { Set($0.map { FrameType(name: $0)! }) }
  }()

  static func hex(_ text: String) -> [UInt8] {
    var bytes = [UInt8]()
    var iterator = text.utf8.makeIterator()
    while let high = iterator.next(), let low = iterator.next() {
      bytes.append(UInt8(String(decoding: [high, low], as: UTF8.self), radix: 16)!)
    }
    return bytes
  }

  private static func u64(_ value: Any?) -> UInt64 { UInt64(value as! String)! }
  private static func int<T: FixedWidthInteger>(_ value: Any?) -> T { T((value as! NSNumber).int64Value) }
  private static func id(_ value: Any?) -> PeerID {
    let text = value as! String
    return PeerID(bytes: hex(text))!
  }
  private static func name(_ value: Any?) -> DisplayName { try! DisplayName(value as! String) }

  /// A FILE frame of the vectors (PROTOCOL.md 13.2).
  static func transfer(_ fields: [String: Any]) -> TransferFrame {
    let id = TransferID(hex: fields["transferID"] as! String)!
    let index: UInt16 = fields["index"].map { int($0) } ?? 0
    switch fields["kind"] as! String {
    case "OFFER":
      let files = (fields["files"] as! [[String: Any]]).map {
        OfferedFile(name: $0["name"] as! String, size: u64($0["size"]), flags: int($0["flags"]))
      }
      return TransferFrame(id, .offer(files))
    case "ACCEPT":
      let files = (fields["files"] as! [[String: Any]]).map {
        AcceptedFile(index: int($0["index"]), status: AcceptedFile.Status(rawValue: int($0["status"]))!, offset: u64($0["offset"]))
      }
      return TransferFrame(id, .accept(files))
    case "CHUNK": return TransferFrame(id, .chunk(index: index, offset: u64(fields["offset"]), data: hex(fields["data"] as! String)))
    case "END": return TransferFrame(id, .end(index: index, size: u64(fields["size"]), hash: hex(fields["blake2b"] as! String)))
    case "ACK": return TransferFrame(id, .ack(index: index, offset: u64(fields["offset"])))
    case "RESEND": return TransferFrame(id, .resend(index: index, offset: u64(fields["offset"])))
    case "VERIFIED": return TransferFrame(id, .verified(index: index))
    case "CANCEL":
      return TransferFrame(id, .cancel(TransferCancelReason(rawValue: int(fields["reason"])), fields["message"] as! String))
    case let other: fatalError("unknown FILE kind \(other) in the vectors")
    }
  }

  static func frame(_ fields: [String: Any]) -> Frame {
    switch fields["type"] as! String {
    case "HELLO":
      return .hello(
        Frame.Hello(
          minVersion: int(fields["minVersion"]), maxVersion: int(fields["maxVersion"]),
          capabilities: Capabilities(rawValue: int(fields["capabilities"])),
          peer: Peer(id: id(fields["peerID"]), name: name(fields["name"]))))
    case "INVITE":
      return .invite(
        Frame.Invite(
          invitationID: u64(fields["invitationID"]), timeoutMilliseconds: int(fields["timeoutMs"]), context: hex(fields["context"] as! String)))
    case "ACCEPT":
      return .accept(invitationID: u64(fields["invitationID"]))
    case "DECLINE":
      return .decline(invitationID: u64(fields["invitationID"]), reason: DeclineReason(rawValue: int(fields["reason"])))
    case "MESSAGE":
      return .message(
        Frame.Message(
          id: u64(fields["messageID"]), sender: id(fields["sender"]), timestamp: u64(fields["timestamp"]),
          hopLimit: int(fields["hopLimit"]), recipients: (fields["recipients"] as! [String]).map { id($0) },
          body: hex(fields["body"] as! String)))
    case "DELIVERED":
      return .delivered(
        Frame.Delivered(
          origin: id(fields["origin"]), recipient: id(fields["recipient"]), ids: (fields["ids"] as! [String]).map { UInt64($0)! },
          signature: (fields["signature"] as? String).map(hex)))
    case "PING": return .ping(nonce: u64(fields["nonce"]))
    case "PONG": return .pong(nonce: u64(fields["nonce"]))
    case "GOODBYE": return .goodbye(GoodbyeReason(rawValue: int(fields["reason"])))
    case "ERROR": return .error(code: ErrorCode(rawValue: int(fields["code"])), message: fields["message"] as! String)
    case "ROSTER":
      let entries = (fields["entries"] as! [[String: Any]]).map {
        Frame.Roster.Entry(
          peer: Peer(id: id($0["peerID"]), name: name($0["name"])), hops: int($0["hops"]), publicKey: hex($0["publicKey"] as! String))
      }
      return .roster(Frame.Roster(kind: RosterKind(rawValue: int(fields["kind"]))!, entries: entries))
    case "VERIFY": return .verify
    case "FILE": return .file(transfer(fields))
    case "UNDELIVERABLE":
      return .undeliverable(
        Frame.Undeliverable(
          origin: id(fields["origin"]), messageID: u64(fields["messageID"]), recipient: id(fields["recipient"]),
          reason: UndeliverableReason(rawValue: int(fields["reason"]))))
    case "RESUME":
      let flags: Int = int(fields["flags"])
      return .resume(
        Frame.Resume(
          session: u64(fields["sessionID"]), received: flags & 1 != 0 ? u64(fields["received"]) : nil,
          delivered: flags & 2 != 0 ? u64(fields["delivered"]) : nil))
    case let other:
      fatalError("unknown frame type \(other) in the vectors")
    }
  }
}
