import NearbyCore
import Testing

/// Decodes everything `decoder` can, then signals end of input.
/// - Returns: the frames and the first error, if any.
func decodeAll(_ chunks: [ArraySlice<UInt8>], finish: Bool = true) -> (frames: [Frame], error: FrameDecodingError?) {
  let decoder = FrameDecoder()
  var frames: [Frame] = []
  do {
    for chunk in chunks {
      decoder.append(chunk)
      while let frame = try decoder.next() { frames.append(frame) }
    }
    if finish { try decoder.finish() }
    return (frames, nil)
  } catch {
    return (frames, error)
  }
}

@Suite("Protocol vectors")
struct FrameCodecVectorTests {
  @Test("the vector files are present and cover every frame type")
  func coverage() {
    #expect(Vectors.maxFrameLength == ProtocolLimits.maximumFrameLength)
    let types = Set(Vectors.valid.map(\.frame.type))
    #expect(types == Set(FrameType.allCases))
    let errors = Set(Vectors.invalid.map(\.error))
    #expect(errors == ["emptyFrame", "frameTooLarge", "unknownFrameType", "malformedFrame", "invalidHello", "truncated"])
  }

  @Test("valid vectors decode to their fields", arguments: Vectors.valid)
  func decodes(_ vector: Vectors.Valid) {
    let result = decodeAll([vector.bytes[...]])
    #expect(result.error == nil)
    #expect(result.frames == [vector.frame])
  }

  @Test("valid vectors encode to their bytes", arguments: Vectors.valid)
  func encodes(_ vector: Vectors.Valid) {
    #expect(FrameEncoder.encode(vector.frame) == vector.bytes)
    if case .message(let message) = vector.frame {
      var buffer: [UInt8] = [0xAA]
      FrameEncoder.encodeMessage(message, into: &buffer)
      #expect(Array(buffer.dropFirst()) == vector.bytes)
      #expect(FrameEncoder.encodedSize(ofMessageWithRecipients: message.recipients.count, bodyLength: message.body.count) == vector.bytes.count)
    }
  }

  @Test("valid vectors decode identically when split at every byte", arguments: Vectors.valid)
  func splits(_ vector: Vectors.Valid) {
    for split in 0...vector.bytes.count {
      let result = decodeAll([vector.bytes[..<split], vector.bytes[split...]])
      #expect(result.error == nil, "split at \(split)")
      #expect(result.frames == [vector.frame], "split at \(split)")
    }
    let byteByByte = decodeAll(vector.bytes.indices.map { vector.bytes[$0...$0] })
    #expect(byteByByte.frames == [vector.frame])
    #expect(byteByByte.error == nil)
  }

  @Test("all valid vectors back to back decode in order, in one chunk and byte by byte")
  func concatenated() {
    let stream = Vectors.valid.flatMap(\.bytes)
    let frames = Vectors.valid.map(\.frame)
    #expect(decodeAll([stream[...]]).frames == frames)
    let byteByByte = decodeAll(stream.indices.map { stream[$0...$0] })
    #expect(byteByByte.frames == frames)
    #expect(byteByByte.error == nil)
  }

  @Test("invalid vectors give their error", arguments: Vectors.invalid)
  func rejects(_ vector: Vectors.Invalid) {
    let whole = decodeAll([vector.bytes[...]])
    #expect(whole.frames.isEmpty)
    #expect(whole.error?.name == vector.error, "\(String(describing: whole.error))")
    let byteByByte = decodeAll(vector.bytes.indices.map { vector.bytes[$0...$0] })
    #expect(byteByByte.error?.name == vector.error)
  }

  @Test("an oversize length is refused from the four length bytes alone, before allocating")
  func oversizeBeforeAllocation() throws {
    let decoder = FrameDecoder()
    decoder.append([0x7F, 0xFF, 0xFF, 0xFF])
    #expect(throws: FrameDecodingError.frameTooLarge(length: 0x7FFF_FFFF)) { try decoder.next() }
    #expect(decoder.allocatedByteCount < 65_536)
    // The decoder stays failed.
    decoder.append(FrameEncoder.encode(.ping(nonce: 1)))
    #expect(throws: FrameDecodingError.frameTooLarge(length: 0x7FFF_FFFF)) { try decoder.next() }
  }

  @Test("the maximum length itself is accepted (and only truncated at EOF)")
  func maximumLength() {
    let header: [UInt8] = [0x00, 0x20, 0x00, 0x00, 0x05]
    let result = decodeAll([header[...]])
    #expect(result.error == .truncated(bufferedBytes: 5))
  }

  @Test("the wire error code of each decoding error")
  func errorCodes() {
    #expect(FrameDecodingError.emptyFrame.errorCode == .malformedFrame)
    #expect(FrameDecodingError.frameTooLarge(length: 1 << 30).errorCode == .frameTooLarge)
    #expect(FrameDecodingError.unknownFrameType(0xFF).errorCode == .unknownFrameType)
    #expect(FrameDecodingError.invalidHello("x").errorCode == .invalidHello)
    #expect(FrameDecodingError.malformedFrame(.message, "x").errorCode == .malformedFrame)
  }
}
