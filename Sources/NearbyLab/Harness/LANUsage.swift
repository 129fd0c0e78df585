/// The help text of the harness tool (`nearby-lan help`, `scripts/lan help`).
public enum LANUsage {
  public static let text = """
    usage: lan COMMAND [ARGS...]        (nearby-lan; scripts/lan builds and runs it)

      lan check [--no-avahi]
          Exit 0 if the harness can run here; otherwise explain and exit 2
          (3: required tools missing, run scripts/install-deps).  Private
          namespaces need root or unprivileged user namespaces; avahi-daemon
          needs real root, so without root only --no-avahi uses pass.

      lan loopback [--no-avahi] [--host-name NAME] [--] [CMD [ARGS...]]
          Run CMD (default: $SHELL) in a fresh network + mount namespace: lo up
          with multicast, private tmpfs /run, own dbus-daemon and (unless
          --no-avahi) avahi-daemon bound to lo with host name NAME (default
          nearby-loopback).  CMD gets NEARBY_LAN=loopback, NEARBY_AVAHI=1|0,
          NEARBY_LAN_HOSTNAME, NEARBY_LAN_SCRIPT.  Stdio (and a TTY) pass
          through; INT/TERM/HUP are forwarded to CMD; everything is torn down
          when CMD exits; exits with CMD's exit status.

      lan up ID SEGMENT [SEGMENT...]
          Build LAN ID (letters, digits, '-').  SEGMENT = comma-separated hosts
          (letters and digits), e.g. `lan up t1 a,b` or `lan up t2 a,r r,c`.
          Host HOST gets netns nb-ID-HOST, interface segS on segment S with
          address 10.77.S.N/24 (N = position of HOST in order of first mention),
          own dbus + avahi-daemon (host name ID-HOST, allow-interfaces = its
          segS).  No output unless an error; a failed `up` removes what it built.

      lan exec ID HOST [--env K=V ...] -- CMD [ARGS...]
          Run CMD inside HOST (its netns + mount namespace), in the foreground,
          same cwd, stdio and exit status passed through.  Environment:
          NEARBY_LAN=ID NEARBY_LAN_HOST=HOST NEARBY_LAN_HOSTNAME=ID-HOST
          NEARBY_LAN_ADDR=<first address> NEARBY_AVAHI=1 NEARBY_LAN_SCRIPT.

      lan avahi ID HOST start|stop|restart|kill|status
      lan avahi loopback start|stop|restart|kill|status   (from inside `lan loopback`)
          Start / stop (TERM) / restart / kill (KILL, simulates a crash) / query
          the host's avahi-daemon.  status prints "running PID" (exit 0) or
          "stopped" (exit 3).

      lan addr ID HOST [SEGMENT#]     print HOST's IPv4 address (first segment by default)
      lan hostname ID HOST            print HOST's mDNS host name (without .local)
      lan list                        print the IDs of existing LANs
      lan down ID                     kill everything inside LAN ID, delete its
                                      namespaces and state (idempotent)
      lan selftest                    check the harness against real avahi

      lan fault ID loss HOST PERCENT%           drop that share of HOST's packets (0% ends it)
      lan fault ID partition HOSTS HOSTS        no packet between the two sides (a or a,b,...)
      lan fault ID heal [HOSTS HOSTS]           undo that partition (every one without sides)
      lan fault ID link HOST down|up [SEG#]     take HOST's links (or one) down or up
      lan fault ID rate HOST RATE|off           limit HOST's traffic both ways (tbf; 1mbit, 500kbit)
      lan fault ID avahi HOST restart|stop|start|kill
          Network faults (nftables and tc inside the hosts' namespaces; the state of
          loss and partitions is in /run/nearby-lan/ID/HOST/faults).

    Logs: /run/nearby-lan/ID/HOST/{avahi,dbus,anchor}.log (loopback:
    /run/nearby-loopback/, inside the loopback's private /run).
    NEARBY_LAN_DEBUG=1 shows every command the harness runs (NEARBY_LAN_DEBUG_FILE=F
    appends them to F); NEARBY_LAN_TIMEOUT (10) and NEARBY_LAN_KILL_GRACE (3) are the
    seconds it waits for a daemon and between SIGTERM and SIGKILL.

    """
}
