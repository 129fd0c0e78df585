import Testing

@testable import NearbyCommandLine

@Suite("Argument parser")
struct ArgumentParserTests {
  let parser = ArgumentParser(root: NearbyCommands.root)

  @Test func optionsFlagsAndValuesInEveryForm() throws {
    let parsed = try parser.parse(["chat", "-n", "alice", "--service=chat-room", "--json", "--allow", "a,b", "--allow", "c", "--info", "x=1"])
    #expect(parsed.path == ["nearby", "chat"])
    #expect(parsed.value("name") == "alice")
    #expect(parsed.value("service") == "chat-room")
    #expect(parsed.flag("json"))
    #expect(!parsed.flag("plain"))
    #expect(parsed.values("allow") == ["a,b", "c"])
    #expect(parsed.values("info") == ["x=1"])
  }

  @Test func environmentFillsMissingOptionsOnly() throws {
    let parsed = try parser.parse(["chat", "--name", "cli"], environment: ["NEARBY_NAME": "env", "NEARBY_STATE_DIR": "/tmp/s"])
    #expect(parsed.value("name") == "cli")
    #expect(parsed.value("state-dir") == "/tmp/s")
  }

  /// A value from the environment that does not convert: the error names the variable (the
  /// user never typed the option) and how to get rid of it.
  @Test func anInvalidEnvironmentValueIsNamedAsSuch() throws {
    let parsed = try parser.parse(["send", "--to", "bob", "x"], environment: ["NEARBY_RECONNECT_GRACE": "abc"])
    #expect {
      _ = try parsed.value(NearbyCommands.Common.reconnectGrace)
    } throws: { error in
      guard case .usage(let message, _) = error as? CommandLineError else { return false }
      return message.hasPrefix("invalid NEARBY_RECONNECT_GRACE (environment) 'abc': ")
        && message.hasSuffix("(or unset NEARBY_RECONNECT_GRACE, or give --reconnect-grace)")
    }
    // The same value typed is about the option.
    let typed = try parser.parse(["send", "--to", "bob", "--reconnect-grace", "abc", "x"], environment: ["NEARBY_RECONNECT_GRACE": "5"])
    #expect {
      _ = try typed.value(NearbyCommands.Common.reconnectGrace)
    } throws: { error in
      guard case .usage(let message, _) = error as? CommandLineError else { return false }
      return message.hasPrefix("invalid --reconnect-grace 'abc': ")
    }
  }

  @Test(
    "usage errors name the problem",
    arguments: [
      (["chat", "--nmae", "x"], "unknown option '--nmae'; did you mean '--name'?"),
      (["chat", "--name"], "option '--name' needs a value (NAME)"),
      (["chat", "--accept", "maybe"], "'maybe' is not a valid value for '--accept': use one of ask, all, none, known"),
      (["chat", "--json=yes"], "flag '--json' does not take a value"),
      (["chat", "extra"], "unexpected argument 'extra'"),
      (["chta"], "unknown command 'chta'; did you mean 'chat'?"),
      ([], "missing command: choose one of chat, send, receive, browse, relay, peers, bench, lab"),
      (["browse", "-x"], "unknown option '-x'"),
    ])
  func usageErrors(arguments: [String], message: String) {
    #expect {
      _ = try parser.parse(arguments)
    } throws: { error in
      guard case .usage(let text, _) = error as? CommandLineError else { return false }
      return text == message
    }
  }

  @Test func helpAndVersionRequests() {
    #expect(throws: CommandLineError.helpRequested(path: ["nearby", "chat"])) { try parser.parse(["chat", "--name", "x", "--help"]) }
    #expect(throws: CommandLineError.helpRequested(path: ["nearby", "browse"])) { try parser.parse(["help", "browse"]) }
    #expect(throws: CommandLineError.helpRequested(path: ["nearby"])) { try parser.parse(["-h"]) }
    #expect(throws: CommandLineError.versionRequested) { try parser.parse(["--version"]) }
  }

  @Test func doubleDashEndsOptions() throws {
    let parsed = try parser.parse(["lab", "--hosts", "a,b", "--", "nearby", "browse", "--timeout", "3"])
    #expect(parsed.variadic("command") == ["nearby", "browse", "--timeout", "3"])
  }

  @Test func negativeLookingNumbersAreValues() throws {
    let parsed = try parser.parse(["browse", "--timeout", "-1"])
    #expect(parsed.value("timeout") == "-1")
  }

  /// The relay's busy polling: microseconds from 0 (never) to a second, read once, typed.
  @Test(arguments: [("0", 0 as Int?), ("200", 200), ("1000000", 1_000_000), ("-1", nil), ("1000001", nil), ("2e2", nil), ("", nil)])
  func relayBusyPollTakesMicrosecondsInRange(text: String, expected: Int?) throws {
    let parsed = try parser.parse(["relay", "--busy-poll", text])
    if let expected {
      #expect(try parsed.value(NearbyCommands.Relay.busyPoll) == expected)
    } else {
      #expect {
        _ = try parsed.value(NearbyCommands.Relay.busyPoll)
      } throws: { error in
        guard case .usage(let message, _) = error as? CommandLineError else { return false }
        return message == "invalid --busy-poll '\(text)': give a number of microseconds from 0 (never poll) to 1000000"
      }
    }
    #expect(try parser.parse(["relay"]).value(NearbyCommands.Relay.busyPoll) == nil)
  }

  /// `send --rate`: bytes a second with an optional k, M or G, from 1000 to 1000G. Values a
  /// UInt64 cannot hold ("1e20", "inf") trapped in the conversion.
  @Test(arguments: [
    ("500k", 500_000 as UInt64?), ("2M", 2_000_000), ("1000", 1000), ("1000G", 1_000_000_000_000), ("999", nil), ("0", nil), ("0x10k", nil),
    ("1e20", nil), ("inf", nil), ("nan", nil), ("2e19k", nil), ("18446744073709551616", nil), ("1001G", nil), ("k", nil),
  ])
  func sendRateIsBytesASecondInRange(text: String, expected: UInt64?) throws {
    let parsed = try parser.parse(["send", "--to", "bob", "--rate", text, "file"])
    if let expected {
      #expect(try parsed.value(NearbyCommands.Send.rate) == expected)
    } else {
      #expect {
        _ = try parsed.value(NearbyCommands.Send.rate)
      } throws: { error in
        guard case .usage(let message, _) = error as? CommandLineError else { return false }
        return message == "invalid --rate '\(text)': give a rate from 1000 bytes to 1000G a second, for example 500k or 2M"
      }
    }
  }

  @Test func helpTextListsEveryOptionWithItsDefault() {
    let help = HelpFormatter(root: NearbyCommands.root).help(["nearby", "chat"])
    for option in ["--name NAME", "--service TYPE", "--accept POLICY", "--allow ID,...", "--json", "--plain", "--state-dir DIR", "-h, --help"] {
      #expect(help.contains(option), "\(option) missing")
    }
    #expect(help.contains("(values: ask, all, none, known)"))
    #expect(help.contains("(default: nearby-devices)"))
    for line in help.split(separator: "\n") { #expect(line.count <= 80, "too wide: \(line)") }
  }
}
