/// The packet faults of one host — a share of packets lost, and the addresses it is cut
/// from — kept in the host's state directory (`faults`) and applied as one nftables table of
/// the host's network namespace, replaced as a whole on every change.
///
/// Only the host's segment interfaces (`seg*`) are filtered: its loopback keeps working.
/// Loss drops that share of the packets the host receives and of those it sends (nftables
/// `numgen random`); a cut drops every packet from or to the address, multicast (mDNS)
/// included, since it carries the sender's address.
public struct HostFaults: Sendable, Equatable {
  /// The nftables table the harness owns in each host.
  public static let table = "nearby_lab"

  /// 0 to 100.
  public var lossPercent = 0
  /// Addresses of hosts this one is partitioned from.
  public var cut: Set<String> = []

  public init(lossPercent: Int = 0, cut: Set<String> = []) {
    self.lossPercent = lossPercent
    self.cut = cut
  }

  /// Reads the state file (`loss N` and `cut ADDRESS` lines; anything else is ignored).
  public init(text: String) {
    for line in text.split(separator: "\n") {
      let fields = line.split(separator: " ")
      guard fields.count == 2 else { continue }
      switch fields[0] {
      case "loss": lossPercent = Int(fields[1]).map { min(max($0, 0), 100) } ?? 0
      case "cut": cut.insert(String(fields[1]))
      default: continue
      }
    }
  }

  /// The state file's text.
  public var text: String {
    (lossPercent > 0 ? "loss \(lossPercent)\n" : "") + cut.sorted().map { "cut \($0)\n" }.joined()
  }

  public var isEmpty: Bool { lossPercent == 0 && cut.isEmpty }

  /// An `nft -f` script that replaces the table with these faults, atomically (or removes it
  /// when there are none); it works whether or not the table exists.
  public var nftablesScript: String {
    let reset = "table inet \(Self.table)\ndelete table inet \(Self.table)\n"
    guard !isEmpty else { return reset }
    func chain(_ name: String, _ interface: String, _ address: String) -> String {
      var rules: [String] = []
      if !cut.isEmpty { rules.append("\(interface) \"seg*\" ip \(address) { \(cut.sorted().joined(separator: ", ")) } drop") }
      if lossPercent > 0 { rules.append("\(interface) \"seg*\" numgen random mod 100 < \(lossPercent) drop") }
      return """
          chain \(name) {
            type filter hook \(name) priority -10; policy accept;
        \(rules.map { "    " + $0 }.joined(separator: "\n"))
          }
        """
    }
    return reset + "table inet \(Self.table) {\n" + chain("input", "iifname", "saddr") + "\n" + chain("output", "oifname", "daddr") + "\n}\n"
  }

  /// The `tc` arguments (after `tc -n NAMESPACE`) that limit an interface's sending to `rate`,
  /// or remove the limit. A token bucket (tbf) with a burst of 20 ms at that rate (at least
  /// 4 KiB, so full-size packets pass) and at most 100 ms of queue.
  public static func rateArguments(interface: String, rate: FaultAction.Rate?) -> [String] {
    guard let rate else { return ["qdisc", "del", "dev", interface, "root"] }
    let burst = max(4096, rate.bitsPerSecond / 8 / 50)
    return ["qdisc", "replace", "dev", interface, "root", "tbf", "rate", "\(rate.bitsPerSecond)bit", "burst", "\(burst)", "latency", "100ms"]
  }
}
