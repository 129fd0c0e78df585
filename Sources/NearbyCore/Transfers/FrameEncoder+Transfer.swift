extension FrameEncoder {
  /// Appends the payload of a FILE frame (after the type byte).
  static func appendTransferFields(_ frame: TransferFrame, into buffer: inout [UInt8]) {
    buffer.append(frame.kind)
    buffer.append(frame.transfer.value)
    switch frame.body {
    case .offer(let files):
      precondition(files.count <= Int(UInt16.max), "too many files")
      buffer.appendBigEndian(UInt16(files.count))
      for file in files {
        buffer.appendBigEndian(file.size)
        buffer.append(file.flags)
        let name = Array(file.name.utf8)
        precondition(name.count <= Int(UInt16.max), "name too long")
        buffer.appendBigEndian(UInt16(name.count))
        buffer.append(contentsOf: name)
      }
    case .accept(let files):
      precondition(files.count <= Int(UInt16.max), "too many files")
      buffer.appendBigEndian(UInt16(files.count))
      for file in files {
        buffer.appendBigEndian(file.index)
        buffer.append(file.status.rawValue)
        buffer.appendBigEndian(file.offset)
      }
    case .chunk(let index, let offset, let data):
      appendChunkHeader(index: index, offset: offset, count: data.count, into: &buffer)
      buffer.append(contentsOf: data)
    case .end(let index, let size, let hash):
      precondition(hash.count == 32, "a BLAKE2b-256 hash is 32 bytes")
      buffer.appendBigEndian(index)
      buffer.appendBigEndian(size)
      buffer.append(contentsOf: hash)
    case .ack(let index, let offset), .resend(let index, let offset):
      buffer.appendBigEndian(index)
      buffer.appendBigEndian(offset)
    case .verified(let index):
      buffer.appendBigEndian(index)
    case .cancel(let reason, let message):
      buffer.append(reason.rawValue)
      let bytes = Array(message.utf8)
      precondition(bytes.count <= Int(UInt16.max), "cancel message too long")
      buffer.appendBigEndian(UInt16(bytes.count))
      buffer.append(contentsOf: bytes)
    }
  }

  private static func appendChunkHeader(index: UInt16, offset: UInt64, count: Int, into buffer: inout [UInt8]) {
    buffer.appendBigEndian(index)
    buffer.appendBigEndian(offset)
    buffer.appendBigEndian(UInt32(count))
  }

  /// The encoded size of a CHUNK frame with `count` data bytes, length prefix included.
  package static func encodedChunkSize(dataCount count: Int) -> Int { 4 + 1 + 1 + 16 + 2 + 8 + 4 + count }

  /// Appends a FILE CHUNK frame straight from the file's bytes (the sending hot path: no
  /// ``Frame`` value, one copy of the data).
  package static func encodeChunk(
    _ transfer: TransferID, index: UInt16, offset: UInt64, data: UnsafeRawBufferPointer, into buffer: inout [UInt8]
  ) {
    buffer.appendBigEndian(UInt32(encodedChunkSize(dataCount: data.count) - 4))
    buffer.append(FrameType.file.rawValue)
    buffer.append(3)
    buffer.append(transfer.value)
    appendChunkHeader(index: index, offset: offset, count: data.count, into: &buffer)
    buffer.append(contentsOf: data)
  }
}
