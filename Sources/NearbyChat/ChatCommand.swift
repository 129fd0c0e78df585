/// One line typed in the chat, understood.
public enum ChatCommand: Equatable, Sendable {
  case peers
  case who
  case invitations
  case invite(target: String, context: String)
  case accept(target: String)
  case decline(target: String)
  /// `/accept` or `/decline` without a name: answer the only pending invitation.
  case answerOnly(accept: Bool)
  case message(target: String, text: String)
  case leave(target: String)
  /// Show the verification code of the session with a peer, here and there.
  case verify(target: String)
  /// The codes matched: remember the peer as verified.
  case trust(target: String)
  /// Offer files and folders to a peer.
  case sendFiles(target: String, paths: [String])
  /// Accept an offer (nil: the only one waiting); `files` picks some of its files (names,
  /// folders or patterns such as `*.jpg`; empty: all of them).
  case receive(offer: String?, files: [String] = [])
  /// Refuse an offer (nil: the only one waiting).
  case refuse(offer: String?)
  /// The transfers that are not over.
  case transfers
  /// Cancel a transfer (nil: the only one going on).
  case cancelTransfer(String?)
  case quit
  case help
  /// Text for every connected peer.
  case say(String)
  /// Nothing to do (an empty line).
  case empty
  /// A line that is not understood: a short hint to show, never a reason to exit.
  case invalid(String)

  /// The commands, for help and completion.
  public static let names = [
    "/accept", "/cancel", "/decline", "/help", "/invitations", "/invite", "/leave", "/msg", "/peers", "/quit", "/receive", "/refuse", "/send",
    "/transfers", "/trust", "/verify", "/who",
  ]

  /// Parses a line. Leading and trailing spaces are ignored; `//text` sends `/text`.
  public static func parse(_ line: String) -> ChatCommand {
    let trimmed = line.trimmed
    if trimmed.isEmpty { return .empty }
    guard trimmed.hasPrefix("/") else { return .say(trimmed) }
    if trimmed.hasPrefix("//") { return .say(String(trimmed.dropFirst())) }
    let (word, rest) = trimmed.splitFirstWord()
    let (target, text) = rest.splitFirstWord()
    switch word.lowercased() {
    case "/peers": return rest.isEmpty ? .peers : .invalid("/peers takes no argument")
    case "/who": return rest.isEmpty ? .who : .invalid("/who takes no argument")
    case "/invitations": return rest.isEmpty ? .invitations : .invalid("/invitations takes no argument")
    case "/quit", "/exit": return .quit
    case "/help", "/?": return .help
    case "/invite":
      return target.isEmpty ? .invalid("usage: /invite NAME|ID [context]") : .invite(target: target, context: text)
    case "/accept":
      if target.isEmpty { return .answerOnly(accept: true) }
      return !text.isEmpty ? .invalid("usage: /accept [NAME|ID]") : .accept(target: target)
    case "/decline":
      if target.isEmpty { return .answerOnly(accept: false) }
      return !text.isEmpty ? .invalid("usage: /decline [NAME|ID]") : .decline(target: target)
    case "/leave":
      return target.isEmpty || !text.isEmpty ? .invalid("usage: /leave NAME|ID") : .leave(target: target)
    case "/verify":
      return target.isEmpty || !text.isEmpty ? .invalid("usage: /verify NAME|ID") : .verify(target: target)
    case "/trust":
      return target.isEmpty || !text.isEmpty ? .invalid("usage: /trust NAME|ID (after comparing the code /verify shows)") : .trust(target: target)
    case "/msg":
      if target.isEmpty || text.isEmpty { return .invalid("usage: /msg NAME|ID text") }
      return .message(target: target, text: text)
    case "/send", "/receive", "/refuse", "/transfers", "/cancel":
      return parseFileCommand(word.lowercased(), rest)
    default:
      let suggestion = names.min { editDistance(word.lowercased(), $0) < editDistance(word.lowercased(), $1) }
      var hint = "unknown command \(word)"
      if let suggestion, editDistance(word.lowercased(), suggestion) <= 2 { hint += " (did you mean \(suggestion)?)" }
      return .invalid(hint + "; /help lists the commands, and //text sends a line starting with /")
    }
  }

  /// The text of `/help`.
  public static let helpText = """
    /peers                     peers found on the network
    /who                       peers connected to you
    /invite NAME|ID [context]  invite a peer (context: a note they see)
    /accept [NAME|ID]          accept an invitation (no name: the only one waiting)
    /decline [NAME|ID]         decline an invitation (no name: the only one waiting)
    /invitations               invitations waiting for your answer
    /msg NAME|ID text          a private message
    /send NAME|ID PATH...      offer files and folders to a peer (quote paths with spaces)
    /receive [OFFER]           accept an offer of files (no id: the only one waiting)
    /receive OFFER FILE...     accept only some: names, folders or patterns (*.jpg)
    /refuse [OFFER]            refuse an offer of files
    /transfers                 file transfers going on or waiting
    /cancel [TRANSFER]         cancel a file transfer, either way
    /leave NAME|ID             end the session with a peer
    /verify NAME|ID            show the code of your session with a peer, on both sides
    /trust NAME|ID             the codes matched: remember the peer as verified
    /quit                      leave everyone and exit
    anything else              a message to every connected peer (//text sends /text)
    """
}

package func editDistance(_ a: String, _ b: String) -> Int {
  let a = Array(a)
  let b = Array(b)
  if a.isEmpty { return b.count }
  if b.isEmpty { return a.count }
  var previous = Array(0...b.count)
  for i in 1...a.count {
    var current = [i] + Array(repeating: 0, count: b.count)
    for j in 1...b.count {
      current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
    }
    previous = current
  }
  return previous[b.count]
}

extension String {
  package var trimmed: String {
    var text = Substring(self)
    while let first = text.first, first.isWhitespace { text = text.dropFirst() }
    while let last = text.last, last.isWhitespace { text = text.dropLast() }
    return String(text)
  }

  /// The first word and the rest, trimmed. A word in double quotes may contain spaces.
  package func splitFirstWord() -> (String, String) {
    let text = trimmed
    if text.hasPrefix("\""), let close = text.dropFirst().firstIndex(of: "\"") {
      let word = String(text[text.index(after: text.startIndex)..<close])
      return (word, String(text[text.index(after: close)...]).trimmed)
    }
    guard let space = text.firstIndex(where: \.isWhitespace) else { return (text, "") }
    return (String(text[..<space]), String(text[space...]).trimmed)
  }
}
