/// The type byte of a frame (PROTOCOL.md section 4).
package enum FrameType: UInt8, Sendable, CaseIterable, CustomStringConvertible {
  case hello = 0x01
  case invite = 0x02
  case accept = 0x03
  case decline = 0x04
  case message = 0x05
  case delivered = 0x06
  case ping = 0x07
  case pong = 0x08
  case goodbye = 0x09
  case error = 0x0A
  case roster = 0x0B
  case undeliverable = 0x0C
  case verify = 0x0D
  case resume = 0x0E
  case file = 0x0F

  /// The name used in the specification and the test vectors (`HELLO`, `INVITE`, ...).
  package var description: String {
    switch self {
    case .hello: "HELLO"
    case .invite: "INVITE"
    case .accept: "ACCEPT"
    case .decline: "DECLINE"
    case .message: "MESSAGE"
    case .delivered: "DELIVERED"
    case .ping: "PING"
    case .pong: "PONG"
    case .goodbye: "GOODBYE"
    case .error: "ERROR"
    case .roster: "ROSTER"
    case .undeliverable: "UNDELIVERABLE"
    case .verify: "VERIFY"
    case .resume: "RESUME"
    case .file: "FILE"
    }
  }

  /// Looks a type up by its specification name.
  package init?(name: String) {
    guard let match = Self.allCases.first(where: { $0.description == name }) else { return nil }
    self = match
  }
}
