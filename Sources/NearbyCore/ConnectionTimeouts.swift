/// The timeouts of PROTOCOL.md section 7. Tests shrink them; the defaults are the spec's.
public struct ConnectionTimeouts: Hashable, Sendable {
  /// From TCP established until the handshake authenticated the peer (its HELLO is in it).
  public var handshake: Duration = .seconds(5)
  /// A listener in `idle` waiting for INVITE.
  public var idle: Duration = .seconds(10)
  /// Send PING after this long without sending anything.
  public var pingInterval: Duration = .seconds(1)
  /// Close after this long without receiving a complete frame.
  public var deadPeer: Duration = .seconds(4)
  /// After GOODBYE or ERROR, wait this long for the peer to close.
  public var linger: Duration = .seconds(2)
  /// Per endpoint tried when connecting.
  public var connect: Duration = .seconds(5)

  public init() {}
}
