import CDNSSD

/// A DNS-SD failure, described for people: what failed, the library's error name, and what
/// to do about it.
package struct DNSServiceError: Error, Hashable, Sendable, CustomStringConvertible {
  /// The `DNSServiceErrorType` value.
  package let code: Int32
  /// The call or callback that failed.
  package let operation: String

  package init(code: Int32, operation: String) {
    self.code = code
    self.operation = operation
  }

  /// Whether the daemon is missing (Avahi's compatibility layer answers
  /// `kDNSServiceErr_Unknown` when it cannot reach avahi-daemon over D-Bus).
  package var daemonUnavailable: Bool { code == Int32(kDNSServiceErr_Unknown) }

  package var name: String {
    switch code {
    case Int32(kDNSServiceErr_Unknown): "kDNSServiceErr_Unknown"
    case Int32(kDNSServiceErr_NoSuchName): "kDNSServiceErr_NoSuchName"
    case Int32(kDNSServiceErr_NoMemory): "kDNSServiceErr_NoMemory"
    case Int32(kDNSServiceErr_BadParam): "kDNSServiceErr_BadParam"
    case Int32(kDNSServiceErr_BadReference): "kDNSServiceErr_BadReference"
    case Int32(kDNSServiceErr_BadState): "kDNSServiceErr_BadState"
    case Int32(kDNSServiceErr_BadFlags): "kDNSServiceErr_BadFlags"
    case Int32(kDNSServiceErr_Unsupported): "kDNSServiceErr_Unsupported"
    case Int32(kDNSServiceErr_NotInitialized): "kDNSServiceErr_NotInitialized"
    case Int32(kDNSServiceErr_AlreadyRegistered): "kDNSServiceErr_AlreadyRegistered"
    case Int32(kDNSServiceErr_NameConflict): "kDNSServiceErr_NameConflict"
    case Int32(kDNSServiceErr_Invalid): "kDNSServiceErr_Invalid"
    case Int32(kDNSServiceErr_Incompatible): "kDNSServiceErr_Incompatible"
    case Int32(kDNSServiceErr_BadInterfaceIndex): "kDNSServiceErr_BadInterfaceIndex"
    case Int32(kDNSServiceErr_Refused): "kDNSServiceErr_Refused"
    case Int32(kDNSServiceErr_NoSuchRecord): "kDNSServiceErr_NoSuchRecord"
    default: "DNSServiceErrorType \(code)"
    }
  }

  package var description: String {
    if daemonUnavailable {
      return
        "avahi-daemon is not running (\(name) from \(operation)): start it with `sudo systemctl start avahi-daemon` (or `sudo service avahi-daemon start`); install it with `sudo apt-get install avahi-daemon` if it is missing"
    }
    switch code {
    case Int32(kDNSServiceErr_NameConflict):
      return "\(operation) failed: the name is already taken on the network (\(name)): choose another display name"
    case Int32(kDNSServiceErr_BadParam), Int32(kDNSServiceErr_Invalid):
      return "\(operation) refused its arguments (\(name)): this is a bug in Nearby, please report it"
    default:
      return "\(operation) failed (\(name))"
    }
  }
}
