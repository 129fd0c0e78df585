import CNats

/// A libnats call that failed: the call's name, its status and, for JetStream, the server's
/// error code, with the library's own text ("js_AddStream: insufficient resources (status
/// 30, JetStream error 10023)").
public struct NATSError: Error, Sendable, CustomStringConvertible {
  /// The C function that failed.
  public let call: String
  /// Its `natsStatus`.
  public let status: UInt32
  /// The JetStream error code the server sent (0: none).
  public let jetStreamCode: Int
  /// What libnats said about it.
  public let detail: String

  public init(call: String, status: UInt32, jetStreamCode: Int = 0, detail: String) {
    self.call = call
    self.status = status
    self.jetStreamCode = jetStreamCode
    self.detail = detail
  }

  /// The error of `status` returned by `call`, with the thread's last error text (read at once:
  /// the next libnats call on this thread replaces it).
  init(_ call: String, _ status: natsStatus, jetStream: jsErrCode = jsErrCode(rawValue: 0)) {
    let text = Self.lastErrorText()
    let base = String(cString: natsStatus_GetText(status))
    self.init(
      call: call, status: status.rawValue, jetStreamCode: Int(jetStream.rawValue),
      detail: text.isEmpty || text == base ? base : text)
  }

  /// The calling thread's last libnats error, without the `(file.c:123): ` it starts with.
  static func lastErrorText() -> String {
    var last = natsStatus(rawValue: 0)
    var text = nats_GetLastError(&last).map { String(cString: $0) } ?? ""
    if text.hasPrefix("("), let close = text.firstIndex(of: ")"), text[close...].hasPrefix("): ") {
      text = String(text[text.index(close, offsetBy: 3)...])
    }
    return text
  }

  /// Throws unless `status` is `NATS_OK`.
  static func check(_ status: natsStatus, _ call: String, jetStream: jsErrCode = jsErrCode(rawValue: 0)) throws(NATSError) {
    guard status != NATS_OK else { return }
    throw NATSError(call, status, jetStream: jetStream)
  }

  /// The request timed out (or nobody answered: a JetStream leader is being elected).
  public var isTimeout: Bool { status == NATS_TIMEOUT.rawValue || status == NATS_NO_RESPONDERS.rawValue }

  public var description: String {
    "\(call): \(detail) (status \(status)\(jetStreamCode == 0 ? "" : ", JetStream error \(jetStreamCode)"))"
  }
}
