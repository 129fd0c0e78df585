import CNats

/// A message received from NATS, copied out of libnats's buffer (its `natsMsg` is destroyed
/// at once, on libnats's thread).
public struct NATSMessage: Sendable {
  public let subject: String
  /// Where an answer goes: for a JetStream delivery, the subject that acknowledges it
  /// (`$JS.ACK.<stream>.<consumer>.<delivered>.<stream seq>.<consumer seq>.<time>.<pending>`).
  public let reply: String?
  public let data: [UInt8]

  public init(subject: String, reply: String?, data: [UInt8]) {
    self.subject = subject
    self.reply = reply
    self.data = data
  }

  /// Copies a libnats message (`natsMsg_GetSubject`, `natsMsg_GetReply`, `natsMsg_GetData`).
  init(copying message: OpaquePointer) {
    subject = String(cString: natsMsg_GetSubject(message))
    reply = natsMsg_GetReply(message).map { String(cString: $0) }
    let count = Int(natsMsg_GetDataLength(message))
    if count > 0, let bytes = natsMsg_GetData(message) {
      data = bytes.withMemoryRebound(to: UInt8.self, capacity: count) { Array(UnsafeBufferPointer(start: $0, count: count)) }
    } else {
      data = []
    }
  }

  /// What the reply subject of a JetStream delivery says about it, or `nil` when this is
  /// not one.
  public var delivery: JetStreamDelivery? { reply.flatMap(JetStreamDelivery.init(replySubject:)) }
}

/// The metadata JetStream puts in the reply subject of a message a consumer delivers.
public struct JetStreamDelivery: Hashable, Sendable {
  public let stream: String
  public let consumer: String
  /// How many times this message was delivered (1: the first time).
  public let deliveries: UInt64
  public let streamSequence: UInt64
  /// When the stream stored it, in nanoseconds since 1970.
  public let timestamp: Int64

  /// Parses `$JS.ACK.<stream>.<consumer>.<delivered>.<sseq>.<cseq>.<ts>.<pending>` (and the
  /// longer form with a domain and an account hash that newer servers send).
  public init?(replySubject: String) {
    let tokens = replySubject.split(separator: ".", omittingEmptySubsequences: false)
    guard tokens.count >= 9, tokens[0] == "$JS", tokens[1] == "ACK" else { return nil }
    // The v2 form: $JS.ACK.<domain>.<account hash>.<stream>.<consumer>.<delivered>.<sseq>.<cseq>.<ts>.<pending>[.<token>]
    let base = tokens.count >= 11 ? 4 : 2
    // The time is nanoseconds since 1970: never negative (another site can publish with any
    // reply subject, and an age computed from Int64.min overflowed).
    guard let deliveries = UInt64(tokens[base + 2]), let sequence = UInt64(tokens[base + 3]), let timestamp = Int64(tokens[base + 5]),
      timestamp >= 0
    else {
      return nil
    }
    stream = String(tokens[base])
    consumer = String(tokens[base + 1])
    self.deliveries = deliveries
    streamSequence = sequence
    self.timestamp = timestamp
  }
}
