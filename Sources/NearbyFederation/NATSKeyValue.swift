import CNats
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// A change of a key-value bucket, as a watcher sees it.
public enum NATSKeyValueChange: Sendable, Equatable {
  /// `key` has `value` since `created` (nanoseconds since 1970, the server's clock), at
  /// `revision`.
  case put(key: String, value: [UInt8], created: Int64, revision: UInt64)
  /// `key` was deleted or purged.
  case deleted(key: String)
  /// Every value that existed when the watch began has been given.
  case initialValuesDone
  /// The watcher stopped (``NATSKeyValueWatch/stop()``, or the connection closed).
  case stopped
}

/// A JetStream key-value bucket (libnats's `kvStore`).
public final class NATSKeyValue: @unchecked Sendable {
  // Invariant for @unchecked Sendable: the pointer never changes; kvStore is thread-safe.
  private let store: OpaquePointer
  public let bucket: String

  /// Opens the bucket, creating it when it does not exist (`js_KeyValue`,
  /// `js_CreateKeyValue`). Blocks.
  /// - Parameters:
  ///   - ttl: values older than this are dropped.
  ///   - replicas: falls back to 1 on a server that is not clustered.
  public init(bucket: String, ttl: Duration, replicas: Int, on connection: NATSConnection) throws(NATSError) {
    var store: OpaquePointer?
    let opened = js_KeyValue(&store, connection.jetStream, bucket)
    if opened != NATS_OK {
      var config = kvConfig()
      kvConfig_Init(&config)
      let name = strdup(bucket)
      defer { free(name) }
      config.Bucket = UnsafePointer(name)
      config.History = 1
      config.TTL = ttl.nanoseconds
      config.Replicas = Int32(replicas)
      var status = js_CreateKeyValue(&store, connection.jetStream, &config)
      if status != NATS_OK, replicas > 1, Self.lastErrorMentionsReplicas() {
        config.Replicas = 1
        status = js_CreateKeyValue(&store, connection.jetStream, &config)
      }
      try NATSError.check(status, "js_CreateKeyValue(\(bucket))")
    }
    self.store = store!
    self.bucket = bucket
  }

  private static func lastErrorMentionsReplicas() -> Bool {
    var status = natsStatus(rawValue: 0)
    let text = nats_GetLastError(&status).map { String(cString: $0) } ?? ""
    return text.contains("replicas") || text.contains("10074")
  }

  /// Sets `key` (`kvStore_Put`). Blocks until the bucket stored it. - Returns: its revision.
  @discardableResult
  public func put(_ key: String, _ value: [UInt8]) throws(NATSError) -> UInt64 {
    var revision: UInt64 = 0
    let status = value.withUnsafeBytes { kvStore_Put(&revision, store, key, $0.baseAddress, Int32($0.count)) }
    try NATSError.check(status, "kvStore_Put(\(bucket), \(key))")
    return revision
  }

  /// Sets `key` only if its latest revision is still `revision` (`kvStore_Update`): nobody
  /// wrote it since. Blocks. - Returns: `false` when someone did.
  public func update(_ key: String, _ value: [UInt8], revision: UInt64) throws(NATSError) -> Bool {
    var newRevision: UInt64 = 0
    let status = value.withUnsafeBytes { kvStore_Update(&newRevision, store, key, $0.baseAddress, Int32($0.count), revision) }
    if status == NATS_ERR, NATSError.lastErrorText().contains("wrong last sequence") { return false }
    try NATSError.check(status, "kvStore_Update(\(bucket), \(key))")
    return true
  }

  /// Deletes `key` (`kvStore_Delete`). Blocks.
  public func delete(_ key: String) throws(NATSError) {
    try NATSError.check(kvStore_Delete(store, key), "kvStore_Delete(\(bucket), \(key))")
  }

  /// Watches every key (`kvStore_WatchAll`): first the current values, then
  /// `initialValuesDone`, then each change, handed to `handler` on a thread of the watch's own
  /// (it must not block), until ``NATSKeyValueWatch/stop()``.
  public func watchAll(_ handler: @escaping @Sendable (NATSKeyValueChange) -> Void) throws(NATSError) -> NATSKeyValueWatch {
    var watcher: OpaquePointer?
    try NATSError.check(kvStore_WatchAll(&watcher, store, nil), "kvStore_WatchAll(\(bucket))")
    return NATSKeyValueWatch(watcher: watcher!, handler: handler)
  }

  deinit { kvStore_Destroy(store) }
}

/// A running watch of a bucket: a thread of its own waits in `kvWatcher_Next`.
public final class NATSKeyValueWatch: @unchecked Sendable {
  // Invariant for @unchecked Sendable: the watcher pointer is used by the watch thread and by
  // stop() (kvWatcher_Stop is meant to be called from another thread); it is destroyed only
  // after the thread ended.
  private let watcher: OpaquePointer
  private let stopped = Atomic<Bool>(false)
  private let finished = Mutex<Bool>(false)
  private var thread = pthread_t()

  init(watcher: OpaquePointer, handler: @escaping @Sendable (NATSKeyValueChange) -> Void) {
    self.watcher = watcher
    let context = Unmanaged.passRetained(WatchContext(watcher: watcher, handler: handler)).toOpaque()
    let created = pthread_create(
      &thread, nil,
      { context in
        Unmanaged<WatchContext>.fromOpaque(context!).takeRetainedValue().run()
        return nil
      }, context)
    if created != 0 {
      Unmanaged<WatchContext>.fromOpaque(context).release()
      finished.withLock { $0 = true }
      handler(.stopped)
    }
  }

  /// Stops watching (`kvWatcher_Stop`) and waits for the watch thread to end (blocks
  /// briefly: the thread wakes at once, or within a second). Idempotent.
  public func stop() {
    guard !stopped.exchange(true, ordering: .acquiringAndReleasing) else { return }
    _ = kvWatcher_Stop(watcher)
    let join = finished.withLock { done -> Bool in
      defer { done = true }
      return !done
    }
    if join { pthread_join(thread, nil) }
  }

  deinit {
    stop()
    kvWatcher_Destroy(watcher)
  }
}

private final class WatchContext: @unchecked Sendable {
  // Only the watch thread uses it.
  let watcher: OpaquePointer
  let handler: @Sendable (NATSKeyValueChange) -> Void

  init(watcher: OpaquePointer, handler: @escaping @Sendable (NATSKeyValueChange) -> Void) {
    self.watcher = watcher
    self.handler = handler
  }

  /// Hands out entries until the watcher is stopped (`kvWatcher_Next` then fails).

  func run() {
    while true {
      var entry: OpaquePointer?
      let status = kvWatcher_Next(&entry, watcher, 1000)
      if status == NATS_TIMEOUT { continue }
      guard status == NATS_OK else { break }
      guard let entry else {
        handler(.initialValuesDone)
        continue
      }
      let key = String(cString: kvEntry_Key(entry))
      switch kvEntry_Operation(entry) {
      case kvOp_Put:
        let count = Int(kvEntry_ValueLen(entry))
        var value: [UInt8] = []
        if count > 0, let bytes = kvEntry_Value(entry) {
          value = Array(UnsafeRawBufferPointer(start: bytes, count: count))
        }
        handler(.put(key: key, value: value, created: kvEntry_Created(entry), revision: kvEntry_Revision(entry)))
      default:
        handler(.deleted(key: key))
      }
      kvEntry_Destroy(entry)
    }
    handler(.stopped)
  }
}
