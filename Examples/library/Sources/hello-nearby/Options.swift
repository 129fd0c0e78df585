import Nearby

#if canImport(Glibc)
  import Glibc
#endif

/// The command line: `hello-nearby --name NAME (--invite PEER | --accept [PEER]) [...]`.
struct Options: Sendable {
  enum Role: Sendable {
    /// Invite the peer of this name once it is found.
    case invite(String)
    /// Accept an invitation from the peer of this name (nil: from anyone).
    case accept(String?)
  }

  var name: DisplayName
  var role: Role
  var message: String
  var service: ServiceType
  var stateDirectory: String
  var timeout: Duration

  var partnerName: String? {
    switch role {
    case .invite(let name): name
    case .accept(let name): name
    }
  }

  static let usage = """
    usage: hello-nearby --name NAME --invite PEER [options]
           hello-nearby --name NAME --accept [PEER] [options]

    Finds PEER on the local network, connects (inviting it, or accepting its invitation),
    sends it one message, waits for its message and for the confirmation that ours was
    delivered, then leaves. Exit status: 0 done, 1 failed (declined, timed out, undelivered,
    no avahi-daemon), 64 usage error.

    options:
      --message TEXT     what to send (default: "hello from NAME")
      --service NAME     the DNS-SD service type (default: $NEARBY_SERVICE, else nearby-devices)
      --state-dir DIR    where our identity is kept (default: $NEARBY_STATE_DIR, else
                         $XDG_STATE_HOME/nearby, else ~/.local/state/nearby)
      --timeout SECONDS  give up after this long (default: 30)
    """

  /// A usage error, said in the user's terms.
  struct UsageError: Error, CustomStringConvertible {
    var description: String
  }

  init(_ arguments: [String], environment: [String: String]) throws(UsageError) {
    var name: String?
    var role: Role?
    var message: String?
    var service = environment["NEARBY_SERVICE"].flatMap { $0.isEmpty ? nil : $0 }
    var stateDirectory: String?
    var seconds = 30.0
    var rest = arguments[...]
    func value(_ option: String) throws(UsageError) -> String {
      guard let value = rest.popFirst(), !value.hasPrefix("--") else { throw UsageError(description: "\(option) needs a value") }
      return value
    }
    while let argument = rest.popFirst() {
      switch argument {
      case "--name": name = try value(argument)
      case "--invite": role = .invite(try value(argument))
      case "--accept":
        if let next = rest.first, !next.hasPrefix("--") {
          role = .accept(next)
          rest = rest.dropFirst()
        } else {
          role = .accept(nil)
        }
      case "--message": message = try value(argument)
      case "--service": service = try value(argument)
      case "--state-dir": stateDirectory = try value(argument)
      case "--timeout":
        let text = try value(argument)
        guard let parsed = Double(text), parsed > 0 else { throw UsageError(description: "--timeout needs a number of seconds, not '\(text)'") }
        seconds = parsed
      default: throw UsageError(description: "unknown argument '\(argument)'")
      }
    }
    guard let name else { throw UsageError(description: "--name NAME is required") }
    guard let role else { throw UsageError(description: "give --invite PEER or --accept [PEER]") }
    do {
      self.name = try DisplayName(name)
    } catch {
      throw UsageError(description: "invalid --name '\(name)': \(error)")
    }
    do {
      self.service = try service.map { try ServiceType($0) } ?? .default
    } catch {
      throw UsageError(description: "invalid service type '\(service ?? "")': \(error)")
    }
    self.role = role
    self.message = message ?? "hello from \(name)"
    do {
      self.stateDirectory = try stateDirectory ?? PeerIdentity.defaultDirectory(environment: environment)
    } catch {
      throw UsageError(description: "\(error) (or give --state-dir DIR)")
    }
    self.timeout = .milliseconds(Int(seconds * 1000))
  }

  /// The variables that decide the defaults.
  static func processEnvironment() -> [String: String] {
    var environment: [String: String] = [:]
    for name in ["NEARBY_SERVICE", "NEARBY_STATE_DIR", "XDG_STATE_HOME", "HOME"] {
      if let value = getenv(name) { environment[name] = String(cString: value) }
    }
    return environment
  }
}
