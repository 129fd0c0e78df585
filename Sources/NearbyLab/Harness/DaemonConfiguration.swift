/// The configuration files of the daemons each private host runs: its own system bus
/// (dbus-daemon) and avahi-daemon. Pure text, so every line is testable.
public enum DaemonConfiguration {
  /// The distribution's system bus configuration, which ours includes.
  public static let systemBusConfiguration = "/usr/share/dbus-1/system.conf"

  /// avahi-daemon.conf for a host: IPv4 only, on `interfaces` only (comma-separated), no
  /// wide-area DNS, no reflector, and limits high enough for hundreds of peers per host.
  /// - Parameters:
  ///   - hostName: the mDNS host name (without `.local`).
  ///   - interfaces: `lo`, or the host's segment interfaces (`seg1,seg2`).
  public static func avahi(hostName: String, interfaces: String) -> String {
    """
    # written by Nearby's private-LAN harness (nearby-lan): avahi-daemon of a private test namespace
    [server]
    host-name=\(hostName)
    domain-name=local
    use-ipv4=yes
    use-ipv6=no
    allow-interfaces=\(interfaces)
    enable-dbus=yes
    # Many peers per host (one D-Bus client per DNSServiceRef in libdns_sd).
    clients-max=16384
    objects-per-client-max=16384
    entries-per-entry-group-max=256
    cache-entries-max=65536
    # No ratelimit-* lines: Avahi then applies no packet rate limit.

    [wide-area]
    enable-wide-area=no

    [publish]
    publish-hinfo=no
    publish-workstation=no
    publish-addresses=yes
    publish-aaaa-on-ipv4=no
    publish-a-on-ipv6=no

    [reflector]
    enable-reflector=no

    """
  }

  /// The private system bus's configuration: `base` included, with much higher limits,
  /// because the Avahi compatibility library (libdns_sd) opens one bus connection per
  /// DNSServiceRef and tests run hundreds of peers per host.
  /// - Parameter base: the configuration file to include (``systemBusConfiguration``, or a
  ///   copy made by ``systemBusWithoutUser(_:)``).
  public static func dbus(including base: String) -> String {
    """
    <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
     "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
    <!-- written by Nearby's private-LAN harness (nearby-lan): private system bus of a test namespace -->
    <busconfig>
      <include>\(base)</include>
      <limit name="max_completed_connections">100000</limit>
      <limit name="max_incomplete_connections">10000</limit>
      <limit name="max_connections_per_user">100000</limit>
      <limit name="max_pending_service_starts">10000</limit>
      <limit name="max_names_per_connection">10000</limit>
      <limit name="max_match_rules_per_connection">100000</limit>
      <limit name="max_replies_per_connection">100000</limit>
      <limit name="auth_timeout">60000</limit>
    </busconfig>

    """
  }

  /// The system bus configuration without its `<user>` line, relative include directories
  /// made absolute. In a user namespace (runs without root) dbus-daemon cannot switch to the
  /// messagebus user, and an including file cannot cancel a `<user>`.
  public static func systemBusWithoutUser(_ text: String) -> String {
    text.split(separator: "\n", omittingEmptySubsequences: false)
      .filter { !$0.contains("<user>") }
      .map { $0.replacing("<includedir>system.d</includedir>", with: "<includedir>/usr/share/dbus-1/system.d</includedir>") }
      .joined(separator: "\n")
  }

  /// Whether `uidMap` (the text of /proc/self/uid_map) is the initial user namespace's
  /// identity mapping, i.e. we are not in a user namespace.
  public static func isInitialUserNamespace(uidMap: String) -> Bool {
    uidMap.split(whereSeparator: \.isWhitespace) == ["0", "0", "4294967295"]
  }
}
