extension FrameDecoder {
  /// Decodes the payload of a FILE frame (PROTOCOL.md 13.2). `length` is the frame's length
  /// field (type byte and payload).
  static func decodeTransfer(_ reader: inout ByteReader, length: Int) throws(FrameDecodingError) -> TransferFrame {
    guard length <= ProtocolLimits.maximumTransferFrameLength else {
      throw reader.malformed("a FILE frame of \(length) bytes is longer than \(ProtocolLimits.maximumTransferFrameLength)")
    }
    let kind = try reader.u8("kind")
    let id = try reader.peerID("transferID")
    guard id.isValid else { throw reader.malformed("the transfer id is all zeros") }
    let transfer = TransferID(id)
    switch kind {
    case 1:
      let count = Int(try reader.integer(UInt16.self, "count"))
      guard (1...ProtocolLimits.maximumOfferedFiles).contains(count) else {
        throw reader.malformed("an offer of \(count) files (1 to \(ProtocolLimits.maximumOfferedFiles))")
      }
      var files: [OfferedFile] = []
      files.reserveCapacity(min(count, reader.remaining / 11))
      // The sizes add up to at most 2^62 as well (sums of them in offers, progress and disk
      // space checks fit in 64 bits: four entries of 2^62 trapped there).
      var total: UInt64 = 0
      for _ in 0..<count {
        let size = try reader.integer(UInt64.self, "size")
        let flags = try reader.u8("flags")
        let nameLength = Int(try reader.integer(UInt16.self, "name length"))
        guard (1...ProtocolLimits.maximumOfferedNameBytes).contains(nameLength) else {
          throw reader.malformed("a name of \(nameLength) bytes (1 to \(ProtocolLimits.maximumOfferedNameBytes))")
        }
        let name = try reader.string(nameLength, "name")
        guard size <= ProtocolLimits.maximumFileSize else { throw reader.malformed("a file of \(size) bytes is larger than 2^62") }
        total += size
        guard total <= ProtocolLimits.maximumFileSize else { throw reader.malformed("the offered files add up to more than 2^62 bytes") }
        if flags & 2 != 0, size != 0 { throw reader.malformed("a folder with a size of \(size)") }
        files.append(OfferedFile(name: name, size: size, flags: flags))
      }
      return TransferFrame(transfer, .offer(files))
    case 2:
      let count = Int(try reader.integer(UInt16.self, "count"))
      guard (1...ProtocolLimits.maximumOfferedFiles).contains(count) else {
        throw reader.malformed("an acceptance of \(count) files (1 to \(ProtocolLimits.maximumOfferedFiles))")
      }
      var files: [AcceptedFile] = []
      files.reserveCapacity(min(count, reader.remaining / 11))
      // Which indexes came already: one bit each (searching the list was 8 million
      // comparisons for an ACCEPT of 4 096 entries).
      var seen = [UInt64](repeating: 0, count: 1024)
      for _ in 0..<count {
        let index = try reader.integer(UInt16.self, "index")
        let raw = try reader.u8("status")
        guard let status = AcceptedFile.Status(rawValue: raw) else { throw reader.malformed("status \(raw) is not 0 or 1") }
        let offset = try reader.integer(UInt64.self, "offset")
        let (word, bit) = (Int(index) >> 6, UInt64(1) << (UInt64(index) & 63))
        guard seen[word] & bit == 0 else { throw reader.malformed("file \(index) is accepted twice") }
        seen[word] |= bit
        files.append(AcceptedFile(index: index, status: status, offset: offset))
      }
      return TransferFrame(transfer, .accept(files))
    case 3:
      let index = try reader.integer(UInt16.self, "index")
      let offset = try reader.integer(UInt64.self, "offset")
      let count = Int(try reader.integer(UInt32.self, "data length"))
      guard (1...ProtocolLimits.maximumChunkBytes).contains(count) else {
        throw reader.malformed("a chunk of \(count) bytes (1 to \(ProtocolLimits.maximumChunkBytes))")
      }
      return TransferFrame(transfer, .chunk(index: index, offset: offset, data: try reader.array(count, "data")))
    case 4:
      let index = try reader.integer(UInt16.self, "index")
      let size = try reader.integer(UInt64.self, "size")
      return TransferFrame(transfer, .end(index: index, size: size, hash: try reader.array(32, "blake2b")))
    case 5, 6:
      let index = try reader.integer(UInt16.self, "index")
      let offset = try reader.integer(UInt64.self, "offset")
      return TransferFrame(transfer, kind == 5 ? .ack(index: index, offset: offset) : .resend(index: index, offset: offset))
    case 7:
      return TransferFrame(transfer, .verified(index: try reader.integer(UInt16.self, "index")))
    case 8:
      let reason = TransferCancelReason(rawValue: try reader.u8("reason"))
      let length = Int(try reader.integer(UInt16.self, "message length"))
      guard length <= ProtocolLimits.maximumErrorMessageBytes else {
        throw reader.malformed("message of \(length) bytes is longer than \(ProtocolLimits.maximumErrorMessageBytes)")
      }
      return TransferFrame(transfer, .cancel(reason, try reader.string(length, "message")))
    default:
      throw reader.malformed("kind \(kind) is not 1 to 8")
    }
  }
}
