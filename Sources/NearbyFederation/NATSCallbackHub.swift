import CNats
import Synchronization

/// The answer of JetStream to an asynchronous publish.
public struct NATSPublishResult: Sendable {
  /// The `Nearby-Key` header the publish carried (what it was about).
  public let key: String
  public let subject: String
  /// The payload, for a publish to be tried again.
  public let data: [UInt8]
  /// `nil`: stored (at ``sequence``; ``duplicate`` when the stream already had that
  /// message id). Otherwise why not.
  public let failure: NATSError?
  public let sequence: UInt64
  public let duplicate: Bool
}

/// What libnats's callbacks of one connection reach: connection events and the answers of
/// asynchronous publishes. libnats holds it through an unretained pointer; the hub keeps
/// itself alive with one reference of its own, given up in the connection's `closed`
/// callback (the last one libnats makes), so the pointer never outlives it.
final class NATSCallbackHub: Sendable {
  private let onEvent: @Sendable (NATSConnectionEvent) -> Void
  private let publishHandler = Mutex<(@Sendable (NATSPublishResult) -> Void)?>(nil)
  /// The reference libnats's pointer stands for.
  private let selfReference = Mutex<Unmanaged<NATSCallbackHub>?>(nil)

  init(onEvent: @escaping @Sendable (NATSConnectionEvent) -> Void) {
    self.onEvent = onEvent
    selfReference.withLock { $0 = Unmanaged.passRetained(self) }
  }

  /// The closure pointer handed to libnats.
  var pointer: UnsafeMutableRawPointer { Unmanaged.passUnretained(self).toOpaque() }

  /// Gives up the reference libnats's pointer stood for (once).
  func release() {
    selfReference.withLock { reference in
      reference?.release()
      reference = nil
    }
  }

  func post(_ event: NATSConnectionEvent) { onEvent(event) }

  func connected(_ connection: OpaquePointer?) { post(.connected(Self.url(connection))) }
  func reconnected(_ connection: OpaquePointer?) { post(.reconnected(Self.url(connection))) }

  private static func url(_ connection: OpaquePointer?) -> String {
    guard let connection else { return "?" }
    var buffer = [CChar](repeating: 0, count: 256)
    guard natsConnection_GetConnectedUrl(connection, &buffer, buffer.count) == NATS_OK else { return "?" }
    return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
  }

  /// Where the answers of asynchronous publishes go (on libnats's thread; must not block).
  func onPublishAnswered(_ handler: @escaping @Sendable (NATSPublishResult) -> Void) {
    publishHandler.withLock { $0 = handler }
  }

  /// libnats's `jsPubAckHandler`: `message` is ours to destroy.
  func publishAnswered(_ message: OpaquePointer?, _ acknowledgement: UnsafeMutablePointer<jsPubAck>?, _ failure: UnsafeMutablePointer<jsPubAckErr>?) {
    guard let message else { return }
    defer { natsMsg_Destroy(message) }
    var value: UnsafePointer<CChar>?
    let key = natsMsgHeader_Get(message, NATSConnection.keyHeader, &value) == NATS_OK ? value.map { String(cString: $0) } ?? "" : ""
    let copied = NATSMessage(copying: message)
    let error = failure.map { failure in
      NATSError(
        call: "js_PublishMsgAsync(\(copied.subject))", status: failure.pointee.Err.rawValue, jetStreamCode: Int(failure.pointee.ErrCode.rawValue),
        detail: failure.pointee.ErrText.map { String(cString: $0) } ?? String(cString: natsStatus_GetText(failure.pointee.Err)))
    }
    let result = NATSPublishResult(
      key: key, subject: copied.subject, data: copied.data, failure: error, sequence: acknowledgement?.pointee.Sequence ?? 0,
      duplicate: acknowledgement?.pointee.Duplicate ?? false)
    let handler = publishHandler.withLock { $0 }
    handler?(result)
  }
}
