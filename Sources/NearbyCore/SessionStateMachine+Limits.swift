/// Resource limits the shell enforces on a connection (the receive budget): the connection
/// is refused with an ERROR and closed, like any protocol violation.
extension SessionStateMachine {
  /// Connection `id` went over a limit of ours: ERROR `code` with `detail`, then close.
  package mutating func limitExceeded(_ id: ConnectionID, code: ErrorCode, detail: String, now: Duration, into actions: inout [SessionAction]) {
    guard connections[id]?.machine != nil else { return }
    let transition = connections[id]!.machine!.reject(code, detail, now: now)
    perform(transition, on: id, now: now, into: &actions)
  }
}
