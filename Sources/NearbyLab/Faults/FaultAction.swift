/// A fault the lab injects: into the network of a LAN (the harness does those: nftables,
/// tc, `ip link`, the host's avahi-daemon), or into a host's process (`nearby lab` does
/// those: it owns the processes).
public enum FaultAction: Sendable, Equatable, CustomStringConvertible {
  /// Drop `percent` % of the packets the host sends and of those it receives (0 ends it).
  case loss(host: String, percent: Int)
  /// No packet between any host of one side and any host of the other.
  case partition([String], [String])
  /// Undo the partition between the two sides.
  case heal([String], [String])
  /// Undo every partition.
  case healAll
  /// Take the host's links down or up (only the one on `segment` when given).
  case link(host: String, up: Bool, segment: Int?)
  /// Limit what the host sends and receives to `rate` (nil: no limit).
  case rate(host: String, rate: Rate?)
  /// Restart, stop, start or kill (SIGKILL, a crash) the host's avahi-daemon.
  case avahi(host: String, LANCommand.AvahiAction)
  /// SIGSTOP the host's process (group).
  case pause(String)
  /// SIGCONT it.
  case resume(String)
  /// SIGKILL it: the host is down (not a failure) until a `restart`.
  case kill(String)
  /// Start the host's command again (killing it first if it runs), with the same state.
  case restart(String)

  /// A rate in bits per second, as written (`1mbit`, `500kbit`, `2gbit`).
  public struct Rate: Sendable, Equatable, CustomStringConvertible {
    public var bitsPerSecond: Int
    public var description: String

    /// - Returns: nil unless `text` is a whole number followed by `kbit`, `mbit` or `gbit`
    ///   (between 8 kbit/s and 100 gbit/s).
    public init?(_ text: String) {
      let units = [("kbit", 1_000), ("mbit", 1_000_000), ("gbit", 1_000_000_000)]
      guard let (unit, scale) = units.first(where: { text.lowercased().hasSuffix($0.0) }) else { return nil }
      let number = text.dropLast(unit.count)
      guard !number.isEmpty, number.allSatisfy({ $0.isASCII && $0.isNumber }), let value = Int(number), value <= 100_000_000 else { return nil }
      bitsPerSecond = value * scale
      guard (8_000...100_000_000_000).contains(bitsPerSecond) else { return nil }
      description = "\(value)\(unit)"
    }
  }

  /// Whether the lab does it to a process (rather than the harness to the network).
  public var isProcessFault: Bool {
    switch self {
    case .pause, .resume, .kill, .restart: true
    default: false
    }
  }

  /// The hosts it names.
  public var hosts: [String] {
    switch self {
    case .loss(let host, _), .link(let host, _, _), .rate(let host, _), .avahi(let host, _): [host]
    case .partition(let a, let b), .heal(let a, let b): a + b
    case .healAll: []
    case .pause(let host), .resume(let host), .kill(let host), .restart(let host): [host]
    }
  }

  /// The action as a faults file writes it (`partition alice bob`).
  public var description: String {
    switch self {
    case .loss(let host, let percent): "loss \(host) \(percent)%"
    case .partition(let a, let b): "partition \(a.joined(separator: ",")) \(b.joined(separator: ","))"
    case .heal(let a, let b): "heal \(a.joined(separator: ",")) \(b.joined(separator: ","))"
    case .healAll: "heal"
    case .link(let host, let up, let segment): "link \(host) \(up ? "up" : "down")" + (segment.map { " \($0)" } ?? "")
    case .rate(let host, let rate): "rate \(host) \(rate?.description ?? "off")"
    case .avahi(let host, let action): "avahi \(host) \(action.rawValue)"
    case .pause(let host): "pause \(host)"
    case .resume(let host): "resume \(host)"
    case .kill(let host): "kill \(host)"
    case .restart(let host): "restart \(host)"
    }
  }

  /// The actions, with their usage (for hints and the README).
  public static let usages: [(keyword: String, usage: String)] = [
    ("loss", "loss HOST PERCENT%"),
    ("partition", "partition HOST[,HOST...] HOST[,HOST...]"),
    ("heal", "heal [HOST[,HOST...] HOST[,HOST...]]"),
    ("link", "link HOST down|up [SEGMENT#]"),
    ("rate", "rate HOST RATE|off (RATE: 500kbit, 1mbit, 1gbit)"),
    ("avahi", "avahi HOST restart|stop|start|kill"),
    ("pause", "pause HOST"),
    ("resume", "resume HOST"),
    ("kill", "kill HOST"),
    ("restart", "restart HOST"),
  ]
}
