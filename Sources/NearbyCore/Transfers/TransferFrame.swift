/// FILE (0x0F): one step of a file transfer (PROTOCOL.md section 13). Every FILE frame names
/// its transfer; what follows depends on its kind.
package struct TransferFrame: Hashable, Sendable {
  package var transfer: TransferID
  package var body: Body

  package init(_ transfer: TransferID, _ body: Body) {
    self.transfer = transfer
    self.body = body
  }

  package enum Body: Hashable, Sendable {
    /// Sender → receiver: the files, in order (their index is their position).
    case offer([OfferedFile])
    /// Receiver → sender: the files it wants, and where each starts (a resume).
    case accept([AcceptedFile])
    /// Sender → receiver: bytes of file `index` from `offset`.
    case chunk(index: UInt16, offset: UInt64, data: [UInt8])
    /// Sender → receiver: file `index` is complete: its size and BLAKE2b-256.
    case end(index: UInt16, size: UInt64, hash: [UInt8])
    /// Receiver → sender: the first `offset` bytes of file `index` are written.
    case ack(index: UInt16, offset: UInt64)
    /// Receiver → sender: bytes went missing; send file `index` again from `offset`.
    case resend(index: UInt16, offset: UInt64)
    /// Receiver → sender: file `index` matched its hash and is saved under its final name.
    case verified(index: UInt16)
    /// Either side: the transfer is over.
    case cancel(TransferCancelReason, String)
  }

  /// The kind byte of each body.
  package var kind: UInt8 {
    switch body {
    case .offer: 1
    case .accept: 2
    case .chunk: 3
    case .end: 4
    case .ack: 5
    case .resend: 6
    case .verified: 7
    case .cancel: 8
    }
  }
}

/// One file (or empty folder) of an offer, as the sender names it.
public struct OfferedFile: Hashable, Sendable {
  /// The path relative to the offer, with `/` between folders, as the sender wrote it. The
  /// receiver saves it under a sanitized name (``TransferName``).
  public let name: String
  /// Bytes (0 for a folder).
  public let size: UInt64
  /// The flags byte as received (bit 0: executable, bit 1: an empty folder; others kept).
  package let flags: UInt8

  package init(name: String, size: UInt64, flags: UInt8 = 0) {
    self.name = name
    self.size = size
    self.flags = flags
  }

  public init(name: String, size: UInt64, isExecutable: Bool = false, isDirectory: Bool = false) {
    self.init(name: name, size: size, flags: (isExecutable ? 1 : 0) | (isDirectory ? 2 : 0))
  }

  /// The sender's file had an execute bit (the receiver sets mode 0755 instead of 0644).
  public var isExecutable: Bool { flags & 1 != 0 }
  /// An empty folder: no bytes follow, the receiver creates the folder.
  public var isDirectory: Bool { flags & 2 != 0 }
}

/// A file the receiver wants, in ACCEPT.
package struct AcceptedFile: Hashable, Sendable {
  package enum Status: UInt8, Hashable, Sendable {
    /// Send it from ``offset``.
    case send = 0
    /// The receiver already has it, verified: send nothing.
    case have = 1
  }
  package var index: UInt16
  package var status: Status
  package var offset: UInt64

  package init(index: UInt16, status: Status = .send, offset: UInt64 = 0) {
    self.index = index
    self.status = status
    self.offset = offset
  }
}

/// Why a transfer ended early (CANCEL reason). Unknown numbers are kept.
public struct TransferCancelReason: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
  public let rawValue: UInt8
  public init(rawValue: UInt8) { self.rawValue = rawValue }

  /// The person or program on that side gave up.
  public static let cancelled = TransferCancelReason(rawValue: 1)
  /// The receiver does not want the offer.
  public static let refused = TransferCancelReason(rawValue: 2)
  /// A file's size or BLAKE2b did not match what the sender announced.
  public static let integrity = TransferCancelReason(rawValue: 3)
  /// The receiver does not have the space.
  public static let noSpace = TransferCancelReason(rawValue: 4)
  /// The sender cannot read a file any more (it changed or went away).
  public static let readFailed = TransferCancelReason(rawValue: 5)
  /// The receiver cannot write (the disk filled up, an I/O error).
  public static let writeFailed = TransferCancelReason(rawValue: 6)
  /// A FILE frame broke the rules of the protocol.
  public static let invalid = TransferCancelReason(rawValue: 7)
  /// The receiver of a frame knows no such transfer.
  public static let unknownTransfer = TransferCancelReason(rawValue: 8)
  /// Too many transfers at once.
  public static let busy = TransferCancelReason(rawValue: 9)

  public var description: String {
    switch rawValue {
    case 1: "cancelled"
    case 2: "refused"
    case 3: "integrity"
    case 4: "noSpace"
    case 5: "readFailed"
    case 6: "writeFailed"
    case 7: "invalid"
    case 8: "unknownTransfer"
    case 9: "busy"
    default: "cancelled (reason \(rawValue))"
    }
  }
}

extension ProtocolLimits {
  /// The largest FILE frame (`length`, type byte and payload): 1 MiB, so that its type byte
  /// and payload fit an end-to-end envelope's body when it goes through a relay.
  package static let maximumTransferFrameLength = 1_048_576
  /// The most files (and empty folders) in one offer.
  package static let maximumOfferedFiles = 4096
  /// The longest name in an offer, in bytes.
  package static let maximumOfferedNameBytes = 4096
  /// The most data bytes in one CHUNK.
  package static let maximumChunkBytes = 524_288
  /// The largest file size an offer may announce (2⁶²).
  package static let maximumFileSize: UInt64 = 1 << 62
}
