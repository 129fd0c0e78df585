import NearbyChat
import NearbyScript
import Testing

@Suite("Chat script grammar")
struct ChatScriptParserTests {
  func actions(_ text: String) throws -> [ChatScript.Action] {
    try ChatScript.parse(text).steps.map(\.action)
  }

  @Test func theIssuesExampleParses() throws {
    let script = try ChatScript.parse(
      """
      expect found bob within 5s
      invite bob "lunch?"
      expect connected bob within 10s
      say hello bob
      expect message from bob "hi alice" within 5s
      expect delivered
      quit
      """)
    #expect(script.steps.map(\.line) == [1, 2, 3, 4, 5, 6, 7])
    #expect(
      script.steps.map(\.action) == [
        .expect(ScriptExpectation(event: .found, peer: "bob", timeout: .seconds(5))),
        .chat("/invite bob lunch?"),
        .expect(ScriptExpectation(event: .connected, peer: "bob", timeout: .seconds(10))),
        .chat("hello bob"),
        .expect(ScriptExpectation(event: .message, peer: "bob", text: .exact("hi alice"), timeout: .seconds(5))),
        .expect(ScriptExpectation(event: .delivered)),
        .quit,
      ])
    #expect(script.steps[1].source == #"invite bob "lunch?""#)
  }

  @Test func everyChatCommandBecomesAChatLine() throws {
    let script = """
      say hello everyone
      say "quoted \\"text\\" # not a comment"
      say /slash at the start
      msg bob a private note
      msg "Bob Smith" hi
      invite carol
      invite carol   come over   # a trailing comment
      accept alice
      decline "Dave X"
      leave bob
      peers
      who
      invitations
      help
      /invite bob lunch? # a chat line goes as typed
      //not a command
      """
    #expect(
      try actions(script) == [
        .chat("hello everyone"),
        .chat(#"quoted "text" # not a comment"#),
        .chat("//slash at the start"),
        .chat("/msg bob a private note"),
        .chat(#"/msg "Bob Smith" hi"#),
        .chat("/invite carol"),
        .chat("/invite carol come over"),
        .chat("/accept alice"),
        .chat(#"/decline "Dave X""#),
        .chat("/leave bob"),
        .chat("/peers"),
        .chat("/who"),
        .chat("/invitations"),
        .chat("/help"),
        .chat("/invite bob lunch? # a chat line goes as typed"),
        .chat("//not a command"),
      ])
  }

  @Test func quitSleepCommentsAndBlankLines() throws {
    let script = ChatScript.parse
    let parsed = try script("\u{FEFF}# a comment\r\n\r\n   \n  sleep 500ms  # wait\r\nsleep 1.5s\nsleep 2m\nSLEEP 0s\n/quit\n\n# done\n")
    #expect(parsed.steps.map(\.action) == [.sleep(.milliseconds(500)), .sleep(.milliseconds(1500)), .sleep(.seconds(120)), .sleep(.zero), .quit])
    #expect(parsed.steps.map(\.line) == [4, 5, 6, 7, 8])
    #expect(parsed.steps[0].source == "sleep 500ms")
    #expect(try actions("quit").first == .quit)
    #expect(try actions("/exit").first == .quit)
    #expect(try actions("").isEmpty)
  }

  @Test func expectClausesInAnyOrder() throws {
    let cases: [(String, ScriptExpectation)] = [
      ("expect delivered", ScriptExpectation(event: .delivered)),
      ("expect connected bob", ScriptExpectation(event: .connected, peer: "bob")),
      ("expect connected from bob", ScriptExpectation(event: .connected, peer: "bob")),
      ("expect connected peer 5e6f7a8b", ScriptExpectation(event: .connected, peer: "5e6f7a8b")),
      (
        #"expect message from "Bob Smith" "hi" within 2m"#,
        ScriptExpectation(event: .message, peer: "Bob Smith", text: .exact("hi"), timeout: .seconds(120))
      ),
      (
        #"expect message within 5s "hi\tthere\n" from bob"#,
        ScriptExpectation(event: .message, peer: "bob", text: .exact("hi\tthere\n"), timeout: .seconds(5))
      ),
      ("expect message /hi (alice|bob)/", ScriptExpectation(event: .message, text: .regex("hi (alice|bob)", ignoresCase: false))),
      (
        #"expect error /a\/b \d+/i within 250ms"#,
        ScriptExpectation(event: .error, text: .regex(#"a/b \d+"#, ignoresCase: true), timeout: .milliseconds(250))
      ),
      ("EXPECT Connected BOB", ScriptExpectation(event: .connected, peer: "BOB")),
      ("expect withdrawn from alice", ScriptExpectation(event: .invitationWithdrawn, peer: "alice")),
      ("expect invitationWithdrawn", ScriptExpectation(event: .invitationWithdrawn)),
      (#"expect notice "hello""#, ScriptExpectation(event: .notice, text: .exact("hello"))),
      ("expect found bob # the peer", ScriptExpectation(event: .found, peer: "bob")),
    ]
    for (text, expected) in cases {
      #expect(try actions(text) == [.expect(expected)], "\(text)")
    }
  }

  @Test func durations() {
    #expect(ScriptDuration.parse("500ms") == .milliseconds(500))
    #expect(ScriptDuration.parse("5s") == .seconds(5))
    #expect(ScriptDuration.parse("1.5s") == .milliseconds(1500))
    #expect(ScriptDuration.parse("2m") == .seconds(120))
    #expect(ScriptDuration.parse("0.25s") == .milliseconds(250))
    #expect(ScriptDuration.parse("1440m") == .seconds(86_400))
    for bad in ["5", "5x", "-1s", "1.2.3s", ".5s", "5.s", "s", "ms", "1e3s", "inf", "nans", "1441m", "5 s", "+5s", ""] {
      #expect(ScriptDuration.parse(bad) == nil, "\(bad)")
    }
    #expect(ScriptDuration.format(.milliseconds(500)) == "500ms")
    #expect(ScriptDuration.format(.milliseconds(1500)) == "1.5s")
    #expect(ScriptDuration.format(.seconds(10)) == "10s")
    #expect(ScriptDuration.format(.seconds(120)) == "2m")
  }

  @Test func expectationsPrintInScriptSyntax() {
    #expect(ScriptExpectation(event: .found, peer: "bob", timeout: .seconds(5)).description == "expect found from bob within 5s")
    #expect(
      ScriptExpectation(event: .message, peer: "Bob Smith", text: .exact("say \"hi\""), timeout: .milliseconds(1500)).description
        == #"expect message from "Bob Smith" "say \"hi\"" within 1.5s"#)
    #expect(ScriptExpectation(event: .error, text: .regex("a/b", ignoresCase: true)).description == #"expect error /a\/b/i within 10s"#)
  }

  /// One bad line: where the error is reported, and what it says.
  struct BadLine: CustomTestStringConvertible, Sendable {
    var script: String
    var line: Int
    var column: Int
    var message: String
    var hint: String
    var testDescription: String { script.replacing("\n", with: "⏎") }
  }

  static let badLines: [BadLine] = [
    BadLine(script: "invit bob", line: 1, column: 1, message: "unknown command 'invit'", hint: "did you mean 'invite'?"),
    BadLine(script: "# ok\n\nhello there", line: 3, column: 1, message: "unknown command 'hello'", hint: "to send a message, write: say hello"),
    BadLine(
      script: "  /invit bob", line: 1, column: 3, message: "unknown command /invit (did you mean /invite?)",
      hint: "a line starting with / is a chat command"),
    BadLine(script: "/peers now", line: 1, column: 1, message: "/peers takes no argument", hint: "as typed in the chat"),
    BadLine(script: "sleep 5", line: 1, column: 7, message: "bad duration '5': it has no unit", hint: "500ms, 5s, 1.5s or 2m"),
    BadLine(script: "sleep 5x", line: 1, column: 7, message: "bad duration '5x'", hint: "500ms, 5s, 1.5s or 2m"),
    BadLine(script: "expect found bob within 2d", line: 1, column: 25, message: "bad duration '2d'", hint: "a number and a unit"),
    BadLine(script: "sleep 99999s", line: 1, column: 7, message: "bad duration '99999s': longer than a day", hint: "a number and a unit"),
    BadLine(script: "sleep", line: 1, column: 6, message: "sleep needs a duration", hint: "usage: sleep DURATION"),
    BadLine(script: "sleep 1s 2s", line: 1, column: 10, message: "unexpected '2s' after sleep", hint: "usage: sleep DURATION"),
    BadLine(script: #"invite bob "lunch?"#, line: 1, column: 12, message: "unterminated string: no closing quote", hint: #"end the text with a ""#),
    BadLine(script: #"expect message "hi"#, line: 1, column: 16, message: "unterminated string", hint: #"write \" for a quote"#),
    BadLine(script: #"say "a\qb""#, line: 1, column: 7, message: #"unknown escape '\q'"#, hint: #"write \\ for a backslash"#),
    BadLine(script: #"say "quoted" and more"#, line: 1, column: 14, message: "unexpected text after the quoted text", hint: "inside the quotes"),
    BadLine(script: #"expect message "hi"there"#, line: 1, column: 20, message: "unexpected 't'", hint: "put a space"),
    BadLine(script: "expect message /(unclosed/", line: 1, column: 16, message: "bad regex /(unclosed/", hint: "Swift Regex syntax"),
    BadLine(script: "expect message /hi", line: 1, column: 16, message: "unterminated regex: no closing /", hint: #"write \/ for a slash"#),
    BadLine(script: "expect message /hi/x", line: 1, column: 20, message: "unknown regex flag 'x'", hint: "the only flag is i"),
    BadLine(script: "expect conected bob", line: 1, column: 8, message: "unknown event 'conected'", hint: "did you mean 'connected'?"),
    BadLine(script: "expect", line: 1, column: 7, message: "expect needs an event", hint: "usage: expect [next|no] EVENT"),
    BadLine(script: "expect notice from bob", line: 1, column: 15, message: "notice events are not about a peer", hint: "expect notice /regex/"),
    BadLine(script: "expect notice hello", line: 1, column: 15, message: "unexpected 'hello' in expect", hint: #"quote text to match: "hello"#),
    BadLine(script: "expect found bob 5s", line: 1, column: 18, message: "unexpected '5s' in expect", hint: "write: within 5s"),
    BadLine(script: "expect found bob carol", line: 1, column: 18, message: "unexpected 'carol' in expect", hint: "usage: expect [next|no] EVENT"),
    BadLine(script: #"expect message "a" "b""#, line: 1, column: 20, message: "a second text in one expect", hint: "usage: expect [next|no] EVENT"),
    BadLine(script: "expect found from bob peer carol", line: 1, column: 23, message: "a second from/peer in one expect", hint: "usage"),
    BadLine(script: "expect found within 1s within 2s", line: 1, column: 24, message: "a second within in one expect", hint: "usage"),
    BadLine(script: "expect found from", line: 1, column: 18, message: "from needs a peer's name or id", hint: "usage"),
    BadLine(script: "expect found within", line: 1, column: 20, message: "within needs a duration", hint: "500ms, 5s"),
    BadLine(script: "say", line: 1, column: 4, message: "say needs the text to send", hint: "usage: say TEXT"),
    BadLine(script: "say # only a comment", line: 1, column: 21, message: "say needs the text to send", hint: "usage: say TEXT"),
    BadLine(script: "msg bob", line: 1, column: 8, message: "msg needs the text to send", hint: "usage: msg NAME TEXT"),
    BadLine(script: "invite", line: 1, column: 7, message: "invite needs a peer's name or id", hint: "usage: invite NAME"),
    BadLine(script: #"accept """#, line: 1, column: 8, message: "expected a peer's name or id", hint: "usage: accept NAME"),
    BadLine(script: "accept alice now", line: 1, column: 14, message: "unexpected 'now' after accept", hint: "quote a name with spaces"),
    BadLine(script: "who cares", line: 1, column: 5, message: "unexpected 'cares' after who", hint: "usage: who"),
    BadLine(script: "quit now", line: 1, column: 6, message: "unexpected 'now' after quit", hint: "usage: quit"),
    BadLine(script: "quit\n# fine\n  say late", line: 3, column: 3, message: "nothing may follow quit (line 1)", hint: "the script ends at quit"),
    BadLine(script: #""hello""#, line: 1, column: 1, message: "a line starts with a command", hint: "say TEXT"),
  ]

  @Test(arguments: badLines)
  func anErrorNamesItsLineColumnAndAHint(_ bad: BadLine) {
    #expect {
      _ = try ChatScript.parse(bad.script)
    } throws: { error in
      guard let errors = error as? ChatScriptErrors, errors.errors.count == 1, let first = errors.errors.first else { return false }
      #expect(first.line == bad.line)
      #expect(first.column == bad.column)
      #expect(first.message.contains(bad.message), "message: \(first.message)")
      #expect(first.hint.contains(bad.hint), "hint: \(first.hint)")
      return true
    }
  }

  /// The caret stands under the character as the line is shown: after a tab (shown as four
  /// spaces) and wide characters (two columns each).
  @Test func theCaretStandsUnderTheCharacterAsShown() throws {
    let cases = [
      ("\tsleep 3", String(repeating: " ", count: 4 + 6) + "^"),
      ("expect message 你好 within 3", String(repeating: " ", count: 15 + 4 + 8) + "^"),
    ]
    for (text, caretLine) in cases {
      let errors = try #require(throws: ChatScriptErrors.self) { try ChatScript.parse(text) }
      let shown = errors.errors[0].formatted(file: "a").split(separator: "\n", omittingEmptySubsequences: false)
      // The caret under the 3 of "sleep 3", shown after the 4-space indent of the report.
      #expect(shown[2] == "    " + caretLine, "\(shown)")
    }
  }

  /// `repeat` followed by a tab is the repeat command.
  @Test func repeatMayBeFollowedByATab() throws {
    let script = try ChatScript.parse("repeat\t2 say hi {n}")
    #expect(script.steps.count == 2)
  }

  @Test func everyBadLineIsReportedAtOnceWithACaret() throws {
    let text = """
      expect found bob within 5s
      invit bob
      say fine
      sleep 3
      expect message "open
      """
    let errors = try #require(throws: ChatScriptErrors.self) { try ChatScript.parse(text) }
    #expect(errors.errors.map(\.line) == [2, 4, 5])
    #expect(
      errors.errors[1].formatted(file: "alice.script") == """
        alice.script:4:7: bad duration '3': it has no unit
            sleep 3
                  ^
          hint: write a number and a unit: 500ms, 5s, 1.5s or 2m
        """)
  }
}
