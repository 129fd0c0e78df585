/// The command tree of the `nearby` tool.
public enum NearbyCommands {
  public static let version = "0.1.0"

  static let service = OptionSpec(
    "service", .value(name: "TYPE"),
    help: "The DNS-SD service type: 1-15 characters of a-z, 0-9 and '-' (or _name._tcp).", default: "nearby-devices",
    environment: "NEARBY_SERVICE")
  static let stateDir = OptionSpec(
    "state-dir", .value(name: "DIR"),
    help: "Where this peer's identity is kept; give each peer on one machine its own.",
    default: "$XDG_STATE_HOME/nearby or ~/.local/state/nearby", environment: "NEARBY_STATE_DIR")
  static let json = OptionSpec("json", help: "Print one JSON object per line instead of text.")

  public static let chat = CommandSpec(
    name: "chat", abstract: "Chat with peers on the local network.",
    discussion: """
      At a terminal: a chat with an input line that stays at the bottom. With
      --plain, or when stdin or stdout is not a terminal: one line per event, and
      each input line is a command or a message:
        /peers                     peers found on the network
        /who                       peers connected to you
        /invite NAME|ID [context]  invite a peer
        /accept NAME|ID            accept an invitation
        /decline NAME|ID           decline it
        /invitations               invitations waiting for your answer
        /msg NAME|ID text          a private message
        /leave NAME|ID             end a session
        /help                      this list
        /quit                      leave everyone and exit
      Any other line goes to every connected peer. End of input means /quit once
      pending messages are delivered or failed.
      """,
    options: [
      OptionSpec(
        "name", short: "n", .value(name: "NAME"), help: "Your display name: 1-63 bytes of UTF-8.", default: "the host name",
        environment: "NEARBY_NAME"),
      service,
      OptionSpec("accept", .value(name: "POLICY"), help: "How to answer invitations.", default: "ask", allowed: ["ask", "all", "none"]),
      OptionSpec("allow", .repeating(name: "ID,..."), help: "Peer ids whose invitations are always accepted (repeatable)."),
      OptionSpec("info", .repeating(name: "KEY=VALUE"), help: "Discovery info to publish in the TXT record (repeatable)."),
      OptionSpec("connect", .repeating(name: "HOST:PORT"), help: "Invite the peer listening there at start, without DNS-SD (repeatable)."),
      OptionSpec("invite-timeout", .value(name: "SECONDS"), help: "How long peers have to answer your invitations.", default: "30"),
      OptionSpec("port", .value(name: "PORT"), help: "The TCP port to listen on.", default: "0: any free port"),
      json,
      OptionSpec("plain", help: "Line mode even at a terminal."),
      OptionSpec("no-color", help: "No colors (also when NO_COLOR is set)."),
      OptionSpec("script", .value(name: "FILE"), help: "Run a script of chat commands and expectations ('-' for stdin); exit 0 when it completes."),
      stateDir,
    ],
    examples: [
      "nearby chat --name alice",
      "nearby chat --name bob --accept all --plain",
      "echo '/peers' | nearby chat --name carol --json",
    ])

  public static let browse = CommandSpec(
    name: "browse", abstract: "List the peers on the local network as they come and go.",
    options: [
      service,
      OptionSpec("timeout", .value(name: "SECONDS"), help: "Exit after this many seconds.", default: "run until Ctrl-C"),
      json,
    ],
    examples: ["nearby browse --timeout 5", "nearby browse --json"])

  public static let relay = CommandSpec(
    name: "relay", abstract: "Forward messages between peers and between LAN segments (a service, no terminal).",
    options: [
      OptionSpec(
        "name", short: "n", .value(name: "NAME"), help: "The relay's display name.", default: "relay-<host name>", environment: "NEARBY_NAME"),
      service,
      OptionSpec("accept", .value(name: "POLICY"), help: "How to answer invitations.", default: "all", allowed: ["all", "none"]),
      OptionSpec("allow", .value(name: "FILE"), help: "Accept only the peer ids listed in FILE (one per line; reloaded on SIGHUP)."),
      OptionSpec("max-peers", .value(name: "N"), help: "Decline invitations beyond N connected peers."),
      OptionSpec("connect-found", help: "Invite every peer found on the network."),
      OptionSpec("connect", .repeating(name: "HOST:PORT"), help: "Invite the peer or relay listening there (repeatable)."),
      OptionSpec("port", .value(name: "PORT"), help: "The TCP port to listen on.", default: "0: any free port"),
      OptionSpec(
        "log-level", .value(name: "LEVEL"), help: "The least important log lines to print.", default: "info",
        allowed: ["debug", "info", "warning", "error"]),
      OptionSpec("stats-interval", .value(name: "SECONDS"), help: "Print a stats line this often (0: never).", default: "60"),
      stateDir,
    ],
    examples: ["nearby relay --name hall-relay", "nearby relay --allow /etc/nearby/allow --max-peers 200 --connect-found"])

  public static let bench = CommandSpec(
    name: "bench", abstract: "Measure latency, throughput, handshake, fan-out and memory against raw TCP.",
    options: [
      OptionSpec("quick", help: "Fewer iterations: checks that every benchmark runs."),
      json,
      OptionSpec(
        "only", .repeating(name: "NAME"), help: "Run only this benchmark (repeatable).",
        allowed: ["latency", "throughput", "handshake", "fanout", "memory", "discovery", "probe"]),
    ],
    examples: ["nearby bench", "nearby bench --quick --json", "nearby bench --only latency"])

  public static let lab = CommandSpec(
    name: "lab", abstract: "Run several peers on a private LAN with real Avahi (needs root).",
    discussion: """
      Builds one network namespace per host (or one shared loopback host), starts each host's
      avahi-daemon, runs the command (or each host's script) in every host, prefixes their
      output with the host name, and exits with the first failure's code, cleaning up
      everything. In the command, {host} is replaced by the host's name.
      """,
    options: [
      OptionSpec("hosts", .value(name: "A,B,..."), help: "The hosts to create."),
      OptionSpec("loopback", help: "All hosts share one loopback network instead of a veth LAN."),
      OptionSpec("segments", .repeating(name: "A,B"), help: "A LAN segment of hosts; repeat for several (a host on two is a bridge)."),
      OptionSpec("scripts", .value(name: "DIR"), help: "Run 'nearby chat --name HOST --script DIR/HOST.script' in each host that has one."),
      OptionSpec("timeout", .value(name: "SECONDS"), help: "Stop everything after this long.", default: "120"),
    ],
    arguments: [ArgumentSpec("command", help: "The command to run in each host (after --).", optional: true, variadic: true)],
    examples: ["nearby lab --hosts alice,bob --scripts Examples/two-peers", "nearby lab --hosts a,b --loopback -- nearby browse --timeout 3"])

  public static let root = CommandSpec(
    name: "nearby", abstract: "Peer-to-peer messaging for machines on one LAN.",
    discussion: "Peers find each other with DNS-SD (Avahi), invite each other, and talk over TCP.",
    subcommands: [chat, browse, relay, bench, lab],
    examples: ["nearby chat --name alice", "nearby browse --timeout 5", "nearby help chat"])
}
