import CNats

#if canImport(Glibc)
  import Glibc
#endif

/// The limits of a JetStream stream.
public struct StreamSettings: Sendable, Equatable {
  public var name: String
  public var subjects: [String]
  /// Messages older than this are dropped.
  public var maximumAge: Duration
  /// The stream refuses new messages beyond this many bytes (discard new).
  public var maximumBytes: Int64
  public var replicas: Int
  /// A work queue: a message goes once it is acknowledged.
  public var isWorkQueue = true
  /// How long a message id is remembered to drop a publish repeated after a failure.
  public var duplicateWindow: Duration = .seconds(120)

  public init(name: String, subjects: [String], maximumAge: Duration, maximumBytes: Int64, replicas: Int) {
    self.name = name
    self.subjects = subjects
    self.maximumAge = maximumAge
    self.maximumBytes = maximumBytes
    self.replicas = replicas
  }
}

/// A push consumer that delivers a stream's messages on one subject to a subscriber.
public struct PushConsumerSettings: Sendable, Equatable {
  public var stream: String
  public var name: String
  public var filterSubject: String
  public var deliverSubject: String
  /// Unacknowledged messages are delivered again after this.
  public var acknowledgementWait: Duration = .seconds(30)
  /// At most this many messages are out unacknowledged.
  public var maximumPending = 1024

  public init(stream: String, name: String, filterSubject: String, deliverSubject: String) {
    self.stream = stream
    self.name = name
    self.filterSubject = filterSubject
    self.deliverSubject = deliverSubject
  }
}

extension NATSConnection {
  /// The header that names what an asynchronous publish is about (``NATSPublishResult/key``).
  static let keyHeader = "Nearby-Key"

  /// Creates the stream, or updates its limits (`js_GetStreamInfo`, `js_AddStream`,
  /// `js_UpdateStream`). Blocks. On a single server that is not clustered, replicas fall
  /// back to 1. - Returns: the replicas it has.
  /// - Throws: ``NATSError`` (JetStream not enabled, no quorum, ...).
  @discardableResult
  public func ensureStream(_ settings: StreamSettings) throws(NATSError) -> Int {
    var config = jsStreamConfig()
    jsStreamConfig_Init(&config)
    let name = strdup(settings.name)
    defer { free(name) }
    var subjects = settings.subjects.map { UnsafePointer<CChar>(strdup($0)) }
    defer { subjects.forEach { free(UnsafeMutablePointer(mutating: $0)) } }
    config.Name = UnsafePointer(name)
    config.Retention = settings.isWorkQueue ? js_WorkQueuePolicy : js_LimitsPolicy
    config.Discard = js_DiscardNew
    config.Storage = js_FileStorage
    config.MaxAge = settings.maximumAge.nanoseconds
    config.MaxBytes = settings.maximumBytes
    config.Duplicates = min(settings.duplicateWindow, settings.maximumAge).nanoseconds
    var replicas = settings.replicas
    return try subjects.withUnsafeMutableBufferPointer { buffer throws(NATSError) -> Int in
      buffer.baseAddress!.withMemoryRebound(to: UnsafePointer<CChar>?.self, capacity: buffer.count) { config.Subjects = $0 }
      config.SubjectsLen = Int32(buffer.count)
      while true {
        config.Replicas = Int64(replicas)
        var info: UnsafeMutablePointer<jsStreamInfo>?
        var code = jsErrCode(rawValue: 0)
        let existing = js_GetStreamInfo(&info, jetStream, settings.name, nil, &code)
        // A stream that has these limits already is left alone (every relay checks it at start).
        let current = info?.pointee.Config?.pointee
        let unchanged =
          current.map {
            $0.MaxAge == config.MaxAge && $0.MaxBytes == config.MaxBytes && $0.Retention == config.Retention && $0.Discard == config.Discard
              && $0.SubjectsLen == config.SubjectsLen
          } ?? false
        let currentReplicas = Int(current?.Replicas ?? 0)
        jsStreamInfo_Destroy(info)
        info = nil
        if existing == NATS_OK, unchanged, currentReplicas == replicas {
          return currentReplicas
        }
        let status: natsStatus
        let call: String
        if existing == NATS_OK {
          call = "js_UpdateStream(\(settings.name))"
          status = js_UpdateStream(&info, jetStream, &config, nil, &code)
        } else if existing == NATS_NOT_FOUND || code == JSStreamNotFoundErr {
          call = "js_AddStream(\(settings.name))"
          status = js_AddStream(&info, jetStream, &config, nil, &code)
        } else {
          throw NATSError("js_GetStreamInfo(\(settings.name))", existing, jetStream: code)
        }
        jsStreamInfo_Destroy(info)
        if status == NATS_OK { return replicas }
        if code == JSStreamReplicasNotSupportedErr, replicas > 1 {
          replicas = 1
          continue
        }
        throw NATSError(call, status, jetStream: code)
      }
    }
  }

  /// Creates a push consumer (`js_AddConsumer`). Blocks.
  public func addPushConsumer(_ settings: PushConsumerSettings) throws(NATSError) {
    var config = jsConsumerConfig()
    jsConsumerConfig_Init(&config)
    let name = strdup(settings.name)
    let filter = strdup(settings.filterSubject)
    let deliver = strdup(settings.deliverSubject)
    defer {
      free(name)
      free(filter)
      free(deliver)
    }
    config.Durable = UnsafePointer(name)
    config.FilterSubject = UnsafePointer(filter)
    config.DeliverSubject = UnsafePointer(deliver)
    config.DeliverPolicy = js_DeliverAll
    config.AckPolicy = js_AckExplicit
    config.AckWait = settings.acknowledgementWait.nanoseconds
    config.MaxAckPending = Int64(settings.maximumPending)
    config.MaxDeliver = -1
    config.ReplayPolicy = js_ReplayInstant
    var info: UnsafeMutablePointer<jsConsumerInfo>?
    var code = jsErrCode(rawValue: 0)
    let status = js_AddConsumer(&info, jetStream, settings.stream, &config, nil, &code)
    jsConsumerInfo_Destroy(info)
    try NATSError.check(status, "js_AddConsumer(\(settings.stream), \(settings.name))", jetStream: code)
  }

  /// Deletes a consumer (`js_DeleteConsumer`); one that does not exist is no error. Blocks.
  public func deleteConsumer(stream: String, name: String) throws(NATSError) {
    var code = jsErrCode(rawValue: 0)
    let status = js_DeleteConsumer(jetStream, stream, name, nil, &code)
    if status == NATS_NOT_FOUND || code == JSConsumerNotFoundErr { return }
    try NATSError.check(status, "js_DeleteConsumer(\(stream), \(name))", jetStream: code)
  }

  /// Publishes to a stream without waiting for its answer (`js_PublishMsgAsync`): the
  /// answer goes to the handler of ``onPublishAnswered(_:)`` once the stream stored it, or
  /// failed to, or after `maximumWait`.
  /// - Parameters:
  ///   - key: comes back in the answer (the `Nearby-Key` header).
  ///   - messageID: the stream drops a second publish with the same id (`Nats-Msg-Id`).
  public func publishAsync(_ subject: String, _ data: [UInt8], key: String, messageID: String?, maximumWait: Duration) throws(NATSError) {
    var message: OpaquePointer?
    let created = data.withUnsafeBytes { bytes in
      natsMsg_Create(&message, subject, nil, bytes.baseAddress?.assumingMemoryBound(to: CChar.self), Int32(bytes.count))
    }
    try NATSError.check(created, "natsMsg_Create(\(subject))")
    _ = natsMsgHeader_Set(message, Self.keyHeader, key)
    if let messageID { _ = natsMsgHeader_Set(message, "Nats-Msg-Id", messageID) }
    var options = jsPubOptions()
    jsPubOptions_Init(&options)
    options.MaxWait = maximumWait.milliseconds
    let status = js_PublishMsgAsync(jetStream, &message, &options)
    // On failure the message is still ours.
    if message != nil { natsMsg_Destroy(message) }
    try NATSError.check(status, "js_PublishMsgAsync(\(subject))")
  }

  /// Where the answers of ``publishAsync(_:_:key:messageID:maximumWait:)`` go, on a thread
  /// of libnats (the handler must not block).
  public func onPublishAnswered(_ handler: @escaping @Sendable (NATSPublishResult) -> Void) {
    hub.onPublishAnswered(handler)
  }
}

extension Duration {
  /// Whole nanoseconds, for JetStream's durations.
  var nanoseconds: Int64 { components.seconds * 1_000_000_000 + components.attoseconds / 1_000_000_000 }
}
