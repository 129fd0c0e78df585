// One file: the whole command tree, so that an option is declared once and every command's
// options, help and examples can be read (and kept consistent) side by side.

import Nearby

/// The command tree of the `nearby` tool. Each option is declared once, here, with its type
/// and validation; the commands read their values through these declarations.
public enum NearbyCommands {
  public static let version = "0.2.0"

  /// Options several commands share.
  public enum Common {
    public static let service = Option<ServiceType>(
      OptionSpec(
        "service", .value(name: "TYPE"),
        help: "The DNS-SD service type: 1-15 characters of a-z, 0-9 and '-' (or _name._tcp).", default: "nearby-devices",
        environment: "NEARBY_SERVICE")
    ) { text throws(OptionValueError) in
      do { return try ServiceType(text) } catch { throw OptionValueError("\(error)") }
    }
    public static let stateDirectory = Option<String>(
      OptionSpec(
        "state-dir", .value(name: "DIR"),
        help: "Where this peer's identity is kept; give each peer on one machine its own.",
        default: "$XDG_STATE_HOME/nearby or ~/.local/state/nearby", environment: "NEARBY_STATE_DIR"))
    public static let json = Flag("json", help: "Print one JSON object per line instead of text.")
    public static let port = Option<UInt16>(
      OptionSpec("port", .value(name: "PORT"), help: "The TCP port to listen on.", default: "0: any free port")
    ) { text throws(OptionValueError) in
      guard let value = UInt16(text) else { throw OptionValueError("give a number from 0 to 65535") }
      return value
    }

    public static let reconnectGrace = seconds(
      OptionSpec(
        "reconnect-grace", .value(name: "SECONDS"),
        help: "How long a session whose connection was lost tries to resume before the peer counts as gone (0: never resume).",
        default: "30", environment: "NEARBY_RECONNECT_GRACE"),
      in: 0...86_400, hint: "give a number of seconds from 0 to 86400 (0: sessions do not resume)")

    static func connect(help: String) -> Option<Endpoint> {
      Option(OptionSpec("connect", .repeating(name: "HOST:PORT"), help: help)) { text throws(OptionValueError) in
        guard let endpoint = EndpointText.parse(text) else {
          throw OptionValueError("write HOST:PORT with a numeric address, for example 192.0.2.7:4000 or [fe80::1%eth0]:4000")
        }
        return endpoint
      }
    }

    /// A number of seconds within `range`, as a duration.
    static func seconds(_ spec: OptionSpec, in range: ClosedRange<Double>, hint: String) -> Option<Duration> {
      Option(spec) { text throws(OptionValueError) in
        guard let seconds = Double(text), range.contains(seconds) else { throw OptionValueError(hint) }
        return .milliseconds(Int64((seconds * 1000).rounded()))
      }
    }

    static func displayName(_ spec: OptionSpec) -> Option<DisplayName> {
      Option(spec) { text throws(OptionValueError) in
        do { return try DisplayName(text) } catch { throw OptionValueError("\(error)") }
      }
    }

    public static let downloads = Option<String>(
      OptionSpec(
        "downloads", .value(name: "DIR"), help: "Where received files go (made if missing).",
        default: "$XDG_DOWNLOAD_DIR/nearby or ~/Downloads/nearby"))
    public static let acceptFiles = Option<FileAcceptPolicy>(
      OptionSpec(
        "accept-files", .value(name: "POLICY"),
        help: "How to answer offers of files (all: from peers --accept would take without asking; ask about the others).",
        default: "ask", allowed: ["ask", "all", "none"])
    ) { text throws(OptionValueError) in
      guard let policy = FileAcceptPolicy(rawValue: text) else { throw OptionValueError("use one of ask, all, none") }
      return policy
    }
  }

  public enum Chat {
    public static let name = Common.displayName(
      OptionSpec(
        "name", short: "n", .value(name: "NAME"), help: "Your display name: 1-63 bytes of UTF-8.", default: "the host name",
        environment: "NEARBY_NAME"))
    public static let accept = Option<AcceptPolicy>(
      OptionSpec(
        "accept", .value(name: "POLICY"), help: "How to answer invitations (known: only peers you verified).", default: "ask",
        allowed: ["ask", "all", "none", "known"])
    ) { text throws(OptionValueError) in
      guard let policy = AcceptPolicy(rawValue: text) else { throw OptionValueError("use one of ask, all, none, known") }
      return policy
    }
    public static let allow = Option<[PeerID]>(
      OptionSpec("allow", .repeating(name: "ID,..."), help: "Peer ids whose invitations are always accepted (repeatable).")
    ) { text throws(OptionValueError) in
      var ids: [PeerID] = []
      for item in text.split(separator: ",") {
        let trimmed = item.trimmingWhitespace
        guard let id = PeerID(hex: trimmed) else { throw OptionValueError("'\(trimmed)' is not a peer id (32 hex digits)") }
        ids.append(id)
      }
      return ids
    }
    public static let info = Option<String>(
      OptionSpec("info", .repeating(name: "KEY=VALUE"), help: "Discovery info to publish in the TXT record (repeatable)."))
    public static let connect = Common.connect(help: "Invite the peer listening there at start, without DNS-SD (repeatable).")
    public static let inviteTimeout = Common.seconds(
      OptionSpec("invite-timeout", .value(name: "SECONDS"), help: "How long peers have to answer your invitations.", default: "30"),
      in: 0.1...600, hint: "give a number of seconds from 0.1 to 600")
    public static let plain = Flag("plain", help: "Line mode even at a terminal.")
    public static let noColor = Flag("no-color", help: "No colors (also when NO_COLOR is set).")
    public static let noBell = Flag("no-bell", help: "At a terminal: no bell on private messages, invitations and mentions.")
    public static let noHistory = Flag(
      "no-history", help: "At a terminal: keep no input history or conversation logs in the state directory, and show none.")
    public static let scrollback = Option<Int>(
      OptionSpec("scrollback", .value(name: "LINES"), help: "At a terminal: the lines kept per conversation.", default: "10000")
    ) { text throws(OptionValueError) in
      guard let value = Int(text), (100...1_000_000).contains(value) else { throw OptionValueError("give a number of lines from 100 to 1000000") }
      return value
    }
    public static let script = Option<String>(
      OptionSpec(
        "script", .value(name: "FILE"), help: "Run a script of chat commands and expectations ('-' for stdin); exit 0 when it completes."))

    public static let spec = CommandSpec(
      name: "chat", abstract: "Chat with peers on the local network.",
      discussion: """
        At a terminal: a chat with an input line that stays at the bottom. With
        --plain, or when stdin or stdout is not a terminal: one line per event, and
        each input line is a command or a message:
          /peers                     peers found on the network
          /who                       peers connected to you
          /invite NAME|ID [context]  invite a peer
          /accept [NAME|ID]          accept an invitation (no name: the only one)
          /decline [NAME|ID]         decline it
          /invitations               invitations waiting for your answer
          /msg NAME|ID text          a private message
          /send NAME|ID PATH...      offer files and folders to a peer
          /receive [OFFER]           accept an offer of files (into --downloads)
          /refuse [OFFER]            refuse it
          /transfers                 file transfers going on or waiting
          /cancel [TRANSFER]         cancel a file transfer, either way
          /leave NAME|ID             end a session
          /verify NAME|ID            show the session's verification code on both sides
          /trust NAME|ID             the codes matched: remember the peer as verified
          /help                      this list
          /quit                      leave everyone and exit
        Any other line goes to every connected peer. End of input means /quit once
        pending messages are delivered or failed.
        """,
      options: [
        name.spec, Common.service.spec, accept.spec, allow.spec, info.spec, connect.spec, inviteTimeout.spec, Common.reconnectGrace.spec,
        Common.acceptFiles.spec, Common.downloads.spec, Common.port.spec, Common.json.spec, plain.spec, noColor.spec, noBell.spec,
        noHistory.spec, scrollback.spec, script.spec, Common.stateDirectory.spec,
      ],
      examples: [
        "nearby chat --name alice",
        "nearby chat --name bob --accept all --plain",
        "echo '/peers' | nearby chat --name carol --json",
      ])
  }

  public enum Send {
    public static let to = Option<String>(
      OptionSpec("to", .value(name: "NAME|ID"), help: "The peer to send to: its name (any case) or 4+ hex digits of its id."))
    public static let name = Common.displayName(
      OptionSpec("name", short: "n", .value(name: "NAME"), help: "Our display name.", default: "the host name", environment: "NEARBY_NAME"))
    public static let connect = Common.connect(help: "Reach the peer there instead of finding it with DNS-SD.")
    public static let timeout = Common.seconds(
      OptionSpec(
        "timeout", .value(name: "SECONDS"), help: "Give up when the peer cannot be found or reached for this long (also after a break).",
        default: "60"),
      in: 0.1...1e7, hint: "give a number of seconds, for example 30")

    public static let rate = Option<UInt64>(
      OptionSpec("rate", .value(name: "BYTES"), help: "Send at most this many bytes a second (k, M, G: 1000s).", default: "no limit")
    ) { text throws(OptionValueError) in
      let units: [Character: UInt64] = ["k": 1000, "K": 1000, "m": 1_000_000, "M": 1_000_000, "g": 1_000_000_000, "G": 1_000_000_000]
      var digits = Substring(text)
      var unit: UInt64 = 1
      if let last = digits.last, let scale = units[last] {
        unit = scale
        digits = digits.dropLast()
      }
      // Decimal digits only, at most 1000 G a second: far above any link, and a Double that
      // UInt64 can hold (1e20 and "inf" trapped in the conversion; 0x10 was hex).
      guard digits.allSatisfy({ $0.isNumber && $0.isASCII || $0 == "." }), let value = Double(digits), value > 0, value * Double(unit) >= 1000,
        value * Double(unit) <= 1e12
      else {
        throw OptionValueError("give a rate from 1000 bytes to 1000G a second, for example 500k or 2M")
      }
      return UInt64(value * Double(unit))
    }

    public static let spec = CommandSpec(
      name: "send", abstract: "Send files and folders to a peer, and wait until it has verified every one.",
      discussion: """
        Finds the peer (or dials --connect), invites it, offers the files and waits: until the
        peer has checked the BLAKE2b of every file and saved it (exit 0), or refused, failed
        or cancelled (exit 1, with the reason). A lost connection is resumed where it
        stopped, also after this command or the receiver is started again with the same
        state directory. Progress goes to stderr at most once a second (--json: JSON
        events on stdout). Ctrl-C cancels the transfer.
        """,
      options: [
        to.spec, name.spec, Common.service.spec, connect.spec, timeout.spec, rate.spec, Common.reconnectGrace.spec, Common.port.spec,
        Common.json.spec, Common.stateDirectory.spec,
      ],
      arguments: [ArgumentSpec("paths", help: "Files and folders to send.", variadic: true)],
      examples: ["nearby send --to bob notes.txt photos/", "nearby send --to 5e6f7a8b --connect 192.0.2.7:4000 backup.tar"])
  }

  public enum Receive {
    public static let from = Option<String>(
      OptionSpec("from", .value(name: "NAME|ID"), help: "Take invitations and offers only from this peer (its name or 4+ hex digits of its id)."))
    public static let name = Common.displayName(
      OptionSpec("name", short: "n", .value(name: "NAME"), help: "Our display name.", default: "the host name", environment: "NEARBY_NAME"))
    public static let timeout = Common.seconds(
      OptionSpec("timeout", .value(name: "SECONDS"), help: "Give up when no offer came within this long.", default: "wait for ever"),
      in: 0.1...1e7, hint: "give a number of seconds, for example 300")
    public static let only = Option<String>(
      OptionSpec(
        "only", .repeating(name: "FILE"),
        help: "Receive only these files of the offer: a name, a folder of it, or a pattern such as '*.jpg' (repeatable)."))

    public static let spec = CommandSpec(
      name: "receive", abstract: "Wait for one offer of files, receive it, print where each file was saved.",
      discussion: """
        Advertises itself, accepts invitations (only --from's with --from) and waits for an
        offer. With --accept-files all it is accepted at once; otherwise the offer is shown
        and a line 'y' on stdin accepts it. Files arrive as NAME.part, checked against their
        BLAKE2b, then renamed; nothing is overwritten. Exit 0 once every file is saved (the
        paths on stdout, one per line), 1 on a failure or when refused. Started again with
        the same state directory, it resumes an interrupted transfer. With --only, the other
        files of the offer are left out: the sender never sends them.
        """,
      options: [
        from.spec, Common.downloads.spec, Common.acceptFiles.spec, only.spec, name.spec, Common.service.spec, timeout.spec,
        Common.reconnectGrace.spec, Common.port.spec, Common.json.spec, Common.stateDirectory.spec,
      ],
      examples: [
        "nearby receive --accept-files all", "nearby receive --from alice --downloads /srv/inbox --accept-files all",
        "nearby receive --accept-files all --only 'photos/*.jpg' --only notes.txt",
      ])
  }

  public enum Browse {
    public static let timeout = Common.seconds(
      OptionSpec("timeout", .value(name: "SECONDS"), help: "Exit after this many seconds.", default: "run until Ctrl-C"),
      in: 0.001...1e9, hint: "give a number of seconds, for example 5 or 0.5")

    public static let spec = CommandSpec(
      name: "browse", abstract: "List the peers on the local network as they come and go.",
      options: [Common.service.spec, timeout.spec, Common.json.spec],
      examples: ["nearby browse --timeout 5", "nearby browse --json"])
  }

  public enum Relay {
    public static let name = Common.displayName(
      OptionSpec(
        "name", short: "n", .value(name: "NAME"), help: "The relay's display name.", default: "relay-<host name>", environment: "NEARBY_NAME"))
    public static let accept = Option<String>(
      OptionSpec("accept", .value(name: "POLICY"), help: "How to answer invitations.", default: "all", allowed: ["all", "none"]))
    public static let allow = Option<String>(
      OptionSpec("allow", .value(name: "FILE"), help: "Accept only the peer ids listed in FILE (one per line; reloaded on SIGHUP)."))
    public static let maximumPeers = Option<Int>(
      OptionSpec("max-peers", .value(name: "N"), help: "Decline invitations beyond N connected peers.")
    ) { text throws(OptionValueError) in
      guard let value = Int(text), value > 0 else { throw OptionValueError("give a positive number") }
      return value
    }
    public static let connectFound = Flag("connect-found", help: "Invite every peer found on the network.")
    public static let connect = Common.connect(help: "Invite the peer or relay listening there (repeatable).")
    /// `SessionConfiguration.busyPoll`, in microseconds.
    public static let busyPoll = Option<Int>(
      OptionSpec(
        "busy-poll", .value(name: "MICROSECONDS"),
        help: "After traffic, poll this long for more before sleeping, while it comes that fast: no wake-ups, one busy CPU (0: never).",
        default: "200")
    ) { text throws(OptionValueError) in
      guard let value = Int(text), (0...1_000_000).contains(value) else {
        throw OptionValueError("give a number of microseconds from 0 (never poll) to 1000000")
      }
      return value
    }
    public static let logLevel = Option<String>(
      OptionSpec(
        "log-level", .value(name: "LEVEL"), help: "The least important log lines to print.", default: "info",
        allowed: ["debug", "info", "warning", "error"]))
    /// Zero means never.
    public static let statsInterval = Common.seconds(
      OptionSpec("stats-interval", .value(name: "SECONDS"), help: "Print a stats line this often (0: never).", default: "60"),
      in: 0...1e7, hint: "give a number of seconds (0: never)")

    // Federation (Across sites in the README).
    public static let federate = Option<[String]>(
      OptionSpec(
        "federate", .value(name: "URL,..."),
        help: "Join the relays of other sites through this NATS cluster (nats://HOST:PORT or tls://HOST:PORT, comma-separated, the nearest first).")
    ) { text throws(OptionValueError) in
      let urls = text.split(separator: ",").map { $0.trimmingWhitespace }.filter { !$0.isEmpty }
      guard !urls.isEmpty else { throw OptionValueError("give one or more nats://HOST:PORT, separated by commas") }
      for url in urls where !isNATSURL(url) {
        throw OptionValueError("'\(url)' is not nats://HOST:PORT (or tls://HOST:PORT)")
      }
      return urls
    }
    public static let site = Option<String>(
      OptionSpec("site", .value(name: "NAME"), help: "This relay's site, shown with its peers at other sites (with --federate).")
    ) { text throws(OptionValueError) in
      let valid =
        (1...63).contains(text.utf8.count)
        && text.unicodeScalars.allSatisfy {
          $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || "-_.".unicodeScalars.contains($0))
        }
      guard valid else { throw OptionValueError("use 1-63 letters, digits, '-', '_' and '.'") }
      return text
    }
    public static let natsCredentials = Option<String>(
      OptionSpec("nats-creds", .value(name: "FILE"), help: "NATS credentials (a .creds file with a user JWT and its seed)."))
    public static let natsTrustedCertificates = Option<String>(
      OptionSpec("nats-tls-ca", .value(name: "FILE"), help: "Require TLS to NATS, trusting the CA certificates in FILE (PEM)."))
    public static let queueMaximumAge = Option<Duration>(
      OptionSpec(
        "queue-max-age", .value(name: "AGE"), help: "Keep messages for offline peers this long (s, m, h or d: 90s, 12h, 7d).", default: "7d")
    ) { text throws(OptionValueError) in
      guard let value = parseAge(text) else { throw OptionValueError("write a number and a unit: 90s, 30m, 12h or 7d (at most 365d)") }
      return value
    }
    public static let queueMaximumBytes = Option<Int64>(
      OptionSpec("queue-max-bytes", .value(name: "SIZE"), help: "At most this much is kept for offline peers (K, M or G: 512M).", default: "1G")
    ) { text throws(OptionValueError) in
      guard let value = parseSize(text) else { throw OptionValueError("write a number of bytes, or with K, M or G: 512M, 1G") }
      return value
    }
    public static let presenceTTL = Common.seconds(
      OptionSpec(
        "presence-ttl", .value(name: "SECONDS"), help: "Peers of a site whose relay stops refreshing them are offline after this.",
        default: "30"),
      in: 3...3600, hint: "give a number of seconds from 3 to 3600")
    public static let natsReplicas = Option<Int>(
      OptionSpec("nats-replicas", .value(name: "N"), help: "Copies of the stream and the presence bucket in the cluster.", default: "3")
    ) { text throws(OptionValueError) in
      guard let value = Int(text), (1...5).contains(value) else { throw OptionValueError("give a number from 1 to 5") }
      return value
    }

    /// `nats://HOST:PORT` or `tls://HOST:PORT`.
    static func isNATSURL(_ url: String) -> Bool {
      guard let scheme = url.firstRange(of: "://"), ["nats", "tls"].contains(String(url[..<scheme.lowerBound])) else { return false }
      let rest = url[scheme.upperBound...]
      guard let colon = rest.lastIndex(of: ":"), colon > rest.startIndex else { return false }
      return UInt16(rest[rest.index(after: colon)...]) != nil
    }

    /// `90s`, `30m`, `12h`, `7d` (or seconds alone).
    static func parseAge(_ text: String) -> Duration? {
      let units: [Character: Double] = ["s": 1, "m": 60, "h": 3600, "d": 86_400]
      let (number, scale) = text.last.flatMap { units[$0] }.map { (String(text.dropLast()), $0) } ?? (text, 1)
      guard let value = Double(number), value > 0, value * scale <= 365 * 86_400 else { return nil }
      return .milliseconds(Int64((value * scale * 1000).rounded()))
    }

    /// `1048576`, `512K`, `512M`, `1G`.
    static func parseSize(_ text: String) -> Int64? {
      let units: [Character: Double] = ["K": 1024, "M": 1_048_576, "G": 1_073_741_824]
      let (number, scale) = text.uppercased().last.flatMap { units[$0] }.map { (String(text.dropLast()), $0) } ?? (text, 1)
      guard let value = Double(number), value >= 1, value * scale <= 1e15 else { return nil }
      return Int64(value * scale)
    }

    public static let spec = CommandSpec(
      name: "relay", abstract: "Forward messages between peers and between LAN segments (a service, no terminal).",
      discussion: """
        With --federate and --site, relays of several sites (offices, buildings, VLANs
        that mDNS does not cross) join through a NATS cluster with JetStream: each
        one's peers see the others' in their rosters, messages cross sites sealed end
        to end, and messages for a peer that is offline wait until it connects at any
        site. See "Across sites" in the README.
        """,
      options: [
        name.spec, Common.service.spec, accept.spec, allow.spec, maximumPeers.spec, connectFound.spec, connect.spec,
        Common.reconnectGrace.spec, Common.port.spec, busyPoll.spec, logLevel.spec, statsInterval.spec, federate.spec, site.spec,
        natsCredentials.spec,
        natsTrustedCertificates.spec, queueMaximumAge.spec, queueMaximumBytes.spec, presenceTTL.spec, natsReplicas.spec,
        Common.stateDirectory.spec,
      ],
      examples: [
        "nearby relay --name hall-relay", "nearby relay --allow /etc/nearby/allow --max-peers 200 --connect-found",
        "nearby relay --connect-found --site hq --federate nats://10.0.0.5:4222,nats://10.0.0.6:4222",
      ])
  }

  public enum Peers {
    public static let spec = CommandSpec(
      name: "peers", abstract: "List the peers this identity has met (and whether you verified them), or forget one.",
      discussion: """
        Every peer a session is established with is remembered with its key in the state
        directory's known-peers file (trust on first use). In a chat, /verify NAME shows
        the session's code on both sides and /trust NAME marks the peer verified once the
        codes matched. 'forget ID' removes a peer (and its verification); it needs the
        state directory, so quit the chat that uses it first.
        """,
      options: [Common.stateDirectory.spec, Common.json.spec],
      arguments: [
        ArgumentSpec("action", help: "'forget' to remove a known peer.", optional: true),
        ArgumentSpec("id", help: "The peer id (or 4+ hex digits of it) to forget.", optional: true),
      ],
      examples: ["nearby peers", "nearby peers --json", "nearby peers forget 5e6f7a8b"])
  }

  public enum Bench {
    public static let quick = Flag("quick", help: "Fewer iterations: checks that every benchmark runs.")
    public static let only = Option<String>(
      OptionSpec(
        "only", .repeating(name: "NAME"), help: "Run only this benchmark (repeatable).",
        allowed: ["latency", "throughput", "handshake", "fanout", "files", "memory", "discovery", "hostile", "loss", "federation", "probe"]))

    public static let spec = CommandSpec(
      name: "bench",
      abstract: "Measure latency, throughput, handshake, fan-out, files, memory, hostile peers, loss and federation against baselines.",
      options: [quick.spec, Common.json.spec, only.spec],
      examples: ["nearby bench", "nearby bench --quick --json", "nearby bench --only latency", "nearby bench --only hostile"])
  }

  public enum Lab {
    public static let hosts = Option<[String]>(OptionSpec("hosts", .value(name: "A,B,..."), help: "The hosts to create.")) { text in
      text.split(separator: ",").map(\.trimmingWhitespace)
    }
    public static let loopback = Flag("loopback", help: "All hosts share one loopback network instead of a veth LAN.")
    public static let segments = Option<String>(
      OptionSpec("segments", .repeating(name: "A,B"), help: "A LAN segment of hosts; repeat for several (a host on two is a bridge)."))
    public static let scripts = Option<String>(
      OptionSpec(
        "scripts", .value(name: "DIR"),
        help:
          "Run 'nearby chat --name HOST --script DIR/HOST.script' in each host that has one, DIR/HOST.cmd as a command, and the faults in DIR/faults."
      ))
    public static let timeout = Common.seconds(
      OptionSpec("timeout", .value(name: "SECONDS"), help: "Stop everything after this long.", default: "120"),
      in: 0.001...1e6, hint: "give a number of seconds, for example 60 or 0.5")

    public static let spec = CommandSpec(
      name: "lab", abstract: "Run several peers on a private LAN with real Avahi (needs root).",
      discussion: """
        Builds one network namespace per host (or one shared loopback host), starts each host's
        avahi-daemon, runs the command (or each host's script) in every host, prefixes their
        output with the host name, and exits with the first failure's code, cleaning up
        everything. In the command, {host} is replaced by the host's name.
        """,
      options: [hosts.spec, loopback.spec, segments.spec, scripts.spec, timeout.spec],
      arguments: [ArgumentSpec("command", help: "The command to run in each host (after --).", optional: true, variadic: true)],
      examples: ["nearby lab --hosts alice,bob --scripts Examples/two-peers", "nearby lab --hosts a,b --loopback -- nearby browse --timeout 3"])
  }

  public static let root = CommandSpec(
    name: "nearby", abstract: "Peer-to-peer messaging for machines on one LAN.",
    discussion: "Peers find each other with DNS-SD (Avahi), invite each other, and talk over TCP.",
    subcommands: [Chat.spec, Send.spec, Receive.spec, Browse.spec, Relay.spec, Peers.spec, Bench.spec, Lab.spec],
    examples: ["nearby chat --name alice", "nearby browse --timeout 5", "nearby help chat"])
}

extension StringProtocol {
  /// The text without leading and trailing white space.
  package var trimmingWhitespace: String {
    var text = Substring(self)
    while let first = text.first, first.isWhitespace { text = text.dropFirst() }
    while let last = text.last, last.isWhitespace { text = text.dropLast() }
    return String(text)
  }
}
