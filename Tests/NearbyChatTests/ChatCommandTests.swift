import Nearby
import NearbyChat
import NearbySystem
import Testing

@Suite("Chat commands, peer names, output formatting")
struct ChatCommandTests {
  @Test(
    "parsing input lines",
    arguments: [
      ("hello there", ChatCommand.say("hello there")),
      ("   ", .empty),
      ("/peers", .peers),
      ("/WHO", .who),
      ("/invitations", .invitations),
      ("/invite bob", .invite(target: "bob", context: "")),
      ("/invite bob lunch at noon?", .invite(target: "bob", context: "lunch at noon?")),
      ("/invite \"bob smith\" hi", .invite(target: "bob smith", context: "hi")),
      ("/accept bob", .accept(target: "bob")),
      ("/accept", .answerOnly(accept: true)),
      ("  /DECLINE  ", .answerOnly(accept: false)),
      ("/decline 1a2b3c4d", .decline(target: "1a2b3c4d")),
      ("/msg alice hi there", .message(target: "alice", text: "hi there")),
      ("/leave bob", .leave(target: "bob")),
      ("/quit", .quit),
      ("/help", .help),
      ("//slash at the start", .say("/slash at the start")),
      ("/msg alice", .invalid("usage: /msg NAME|ID text")),
      ("/invite", .invalid("usage: /invite NAME|ID [context]")),
      ("/accept a b", .invalid("usage: /accept [NAME|ID]")),
      ("/decline a b", .invalid("usage: /decline [NAME|ID]")),
      ("/who me", .invalid("/who takes no argument")),
      ("/receive", .receive(offer: nil)),
      ("/receive ab12", .receive(offer: "ab12")),
      ("/receive ab12 *.jpg \"my notes.txt\" album", .receive(offer: "ab12", files: ["*.jpg", "my notes.txt", "album"])),
      ("/refuse ab12 x", .invalid("usage: /refuse [OFFER] (4 or more hex digits of its id)")),
    ])
  func parse(line: String, command: ChatCommand) {
    #expect(ChatCommand.parse(line) == command)
  }

  @Test func someFilesOfAnOfferAreChosenByNameFolderOrPattern() {
    let files = ["album/a.jpg", "album/big.raw", "album/nested/b.jpg", "notes.txt", "album2/c.jpg"].map { OfferedFile(name: $0, size: 1) }
    func choose(_ patterns: String...) -> Result<[Int], CommandProblem> { LineChat.choose(patterns, in: files) }
    #expect(choose("notes.txt") == .success([3]))
    #expect(choose("album") == .success([0, 1, 2]), "a folder is everything below it, not album2")
    #expect(choose("album/") == .success([0, 1, 2]))
    #expect(choose("*.jpg") == .success([0, 2, 4]), "* crosses folders")
    #expect(choose("album/nested", "notes.txt", "album/nested/b.jpg") == .success([2, 3]), "each file once, in offer order")
    #expect(choose("a*") == .success([0, 1, 2, 4]))
    #expect(
      choose("*.jpg", "photo.png")
        == .failure(
          CommandProblem(
            text:
              "no file of the offer is 'photo.png' (its files: album/a.jpg, album/big.raw, album/nested/b.jpg, notes.txt, album2/c.jpg): name a file, a folder or a pattern such as *.jpg, or /receive OFFER for all of them"
          )))
    #expect(
      choose("\u{202E}x")
        == .failure(
          CommandProblem(
            text:
              "no file of the offer is '\\u{202E}x' (its files: album/a.jpg, album/big.raw, album/nested/b.jpg, notes.txt, album2/c.jpg): name a file, a folder or a pattern such as *.jpg, or /receive OFFER for all of them"
          )))
  }

  @Test func unknownCommandsSuggestTheClosestOne() {
    guard case .invalid(let hint) = ChatCommand.parse("/invte bob") else {
      Issue.record("accepted")
      return
    }
    #expect(hint.contains("did you mean /invite?"))
    #expect(hint.contains("/help"))
  }

  static let bob = Peer(id: PeerID(hex: "1a2b3c4d000000000000000000000001")!, name: try! DisplayName("bob"))
  static let bob2 = Peer(id: PeerID(hex: "1a2b3c4e000000000000000000000002")!, name: try! DisplayName("Bob"))
  static let carol = Peer(id: PeerID(hex: "ccccdddd000000000000000000000003")!, name: try! DisplayName("Carol Ann"))

  @Test func namesMatchIgnoringCaseAndIDsByPrefix() {
    #expect(PeerResolver.resolve("CAROL ANN", among: [Self.carol]) == .peer(Self.carol))
    #expect(PeerResolver.resolve("ccccdd", among: [Self.carol, Self.bob]) == .peer(Self.carol))
    #expect(PeerResolver.resolve("1a2b3c4d", among: [Self.bob, Self.bob2]) == .peer(Self.bob))
    #expect(PeerResolver.resolve("1a2b", among: [Self.bob, Self.bob2]) == .ambiguous([Self.bob, Self.bob2]))
    #expect(PeerResolver.resolve("bob", among: [Self.bob, Self.bob2, Self.bob]) == .ambiguous([Self.bob, Self.bob2]))
    #expect(PeerResolver.resolve("dave", among: [Self.bob]) == .notFound)
    #expect(PeerResolver.resolve("abc", among: [Self.bob]) == .notFound)  // too short for an id
    let hint = PeerResolver.hint(for: "bob", .ambiguous([Self.bob, Self.bob2]), what: "peer")
    #expect(hint.contains("1a2b3c4d") && hint.contains("1a2b3c4e") && hint.contains("use the id"))
  }

  @Test func peerTextCannotControlTheTerminal() {
    #expect(EventFormatter.sanitize("hi\u{1B}[2J\u{1B}]0;pwned\u{7}") == "hi\\x1b[2J\\x1b]0;pwned\\x07")
    #expect(EventFormatter.sanitize("two\nlines\r") == "two\\nlines\\r")
    #expect(EventFormatter.sanitize("x\u{9B}y") == "x\\x9by")
    #expect(EventFormatter.sanitize("héllo 👋 日本") == "héllo 👋 日本")
  }

  @Test func jsonEscaping() {
    let value = JSONValue.object([
      ("text", .string("quote \" backslash \\ newline \n tab \t bell \u{7} é 👋")), ("n", .unsigned(18_446_744_073_709_551_615)), ("ok", .bool(true)),
      ("list", .array([.null, .number(-1)])),
    ])
    #expect(
      value.encoded
        == #"{"text":"quote \" backslash \\ newline \n tab \t bell \u0007 é 👋","n":18446744073709551615,"ok":true,"list":[null,-1]}"#)
  }

  /// The writer copies runs of bytes and decodes only what it escapes: every character that
  /// is escaped, and some that are not, at every position of short texts, give what writing
  /// scalar by scalar gives (``JSONValue/escaped(_:)`` for each).
  @Test(arguments: Array(0..<12))
  func jsonStringsAreWrittenAsScalarByScalar(length: Int) {
    func byScalars(_ text: String) -> String {
      var out = "\""
      for scalar in text.unicodeScalars {
        if let escape = JSONValue.escaped(scalar) { out += escape } else { out.unicodeScalars.append(scalar) }
      }
      return out + "\""
    }
    let others: [Unicode.Scalar] = ["é", "\u{80}", "\u{9F}", "\u{A0}", "\u{2027}", "\u{2028}", "\u{2029}", "\u{202A}", "👋", "日"]
    let candidates = (0..<128).map { Unicode.Scalar(UInt8($0)) } + others
    for position in 0..<max(length, 1) {
      for candidate in candidates {
        var scalars = String.UnicodeScalarView(repeating: "é", count: length)
        if length > 0 {
          let index = scalars.index(scalars.startIndex, offsetBy: position)
          scalars.replaceSubrange(index...index, with: [candidate, "q"])
        }
        let text = String(scalars)
        #expect(JSONValue.string(text).encoded == byScalars(text), "\(candidate.value) at \(position) of \(length)")
      }
    }
    #expect(JSONValue.escaped("\u{2028}") == "\\u2028" && JSONValue.escaped("\u{85}") == "\\u0085" && JSONValue.escaped("\u{7F}") == "\\u007f")
  }

  @Test func jsonEventsHaveTheDocumentedFields() throws {
    let formatter = EventFormatter(json: true)
    let message = ReceivedMessage(id: 7, from: Self.bob, isPrivate: true, timestamp: 1000, body: Array("hi".utf8))
    let line = try #require(formatter.format(.message(message)))
    #expect(line.hasPrefix(#"{"event":"message","from":{"id":"1a2b3c4d000000000000000000000001","name":"bob"},"text":"hi","id":7,"private":true"#))
    #expect(formatter.format(.lost(Self.bob)) == #"{"event":"lost","peer":{"id":"1a2b3c4d000000000000000000000001","name":"bob"}}"#)
    let text = EventFormatter(json: false)
    #expect(
      text.format(.connected(Self.bob, PeerSecurity(verificationCode: "123456", isVerified: false)))
        == "* connected to bob (1a2b3c4d), unverified: code 123 456 (/verify bob)")
    #expect(
      text.format(.connected(Self.bob, PeerSecurity(verificationCode: "123456", isVerified: true))) == "* connected to bob (1a2b3c4d) (verified)")
  }
}
