import NearbyCore
import Testing

@Suite("Names of received files (PROTOCOL.md 13.5)")
struct TransferNameTests {
  @Test(arguments: [
    ("../x", ["x"]), ("/etc/passwd", ["etc", "passwd"]), ("a\u{0}b", ["a_b"]), ("CON", ["_CON"]), ("con.txt", ["_con.txt"]),
    ("LPT9", ["_LPT9"]), ("COM0", ["COM0"]), ("CONSOLE", ["CONSOLE"]), ("a\\b", ["a", "b"]), ("..", ["_"]), ("", ["_"]),
    ("./a/./b/", ["a", "b"]), ("a/../../b", ["a", "b"]), ("\u{202E}gpj.exe", ["_gpj.exe"]), ("tab\there", ["tab_here"]),
    ("x\u{9B}2J", ["x_2J"]), ("zero\u{200B}width", ["zero_width"]), ("Grüße 👋.txt", ["Grüße 👋.txt"]), (".bashrc", [".bashrc"]),
    // Hidden by section 2.3 (a tag, a filler, a soft hyphen); a joiner between emoji is not.
    ("a\u{E0041}b", ["a_b"]), ("\u{3164}x", ["_x"]), ("in\u{AD}voice.pdf", ["in_voice.pdf"]), ("👩\u{200D}💻", ["👩\u{200D}💻"]),
  ])
  func components(_ name: String, _ expected: [String]) {
    #expect(TransferName.components(of: name) == expected)
  }

  /// Names a hostile sender built to climb out of the download folder: a component that
  /// shortening turned into `..` (two dots and one character of 601 bytes, a letter with 300
  /// combining marks), and a `/` joined to a combining mark (one character, not `/`, that
  /// the file system read as a separator).
  @Test(arguments: [
    (
      "a/" + Self.dotsAndLongCharacter + "/" + Self.dotsAndLongCharacter + "/.config/autostart/x.desktop",
      ["a", "_", "_", ".config", "autostart", "x.desktop"]
    ),
    (Self.dotsAndLongCharacter, ["_"]), ("." + Self.longCharacter, ["_"]), (Self.longCharacter, ["_"]), (Self.longCharacter + ".txt", [".txt"]),
    ("../\u{301}x", ["\u{301}x"]), ("a/\u{301}/b", ["a", "\u{301}", "b"]), ("\u{600}/x", ["_", "x"]), ("..\\\u{301}x", ["\u{301}x"]),
    ("CON" + Self.longCharacter + ".txt", ["_CON.txt"]),
  ])
  func namesThatClimbedOutStayIn(_ name: String, _ expected: [String]) {
    let components = TransferName.components(of: name)
    #expect(components == expected)
    #expect(TransferName.isSafe(path: components))
  }

  static let longCharacter = "a" + String(repeating: "\u{301}", count: 300)
  static let dotsAndLongCharacter = ".." + longCharacter

  /// Random names of dots, separators, combining marks, prepended marks, NUL and long
  /// characters: every component made of them is safe.
  @Test(arguments: 0..<20)
  func everyComponentOfARandomNameIsSafe(seed: Int) {
    var random = SeededGenerator(seed: UInt64(seed))
    let pieces = [".", ".", "..", "/", "\\", "a", "\u{301}", "\u{600}", "\u{0}", "é", "👋", " ", "\u{202E}", Self.longCharacter, "CON"]
    for _ in 0..<500 {
      let name = (0..<Int(random.next() % 12 + 1)).map { _ in pieces[Int(random.next() % UInt64(pieces.count))] }.joined()
      let components = TransferName.components(of: name)
      #expect(TransferName.isSafe(path: components) || components.count > TransferName.maximumDepth, "\(Array(name.unicodeScalars))")
      #expect(!components.contains(".."))
    }
  }

  @Test(arguments: [
    ([], false), ([""], false), (["."], false), ([".."], false), (["a", ".."], false), (["a/b"], false), (["a\u{0}"], false),
    ([String(repeating: "a", count: 202)], false), (Array(repeating: "a", count: 33), false), (["a", "b"], true), ([".bashrc"], true),
  ])
  func unsafePathsAreSeen(_ path: [String], _ safe: Bool) {
    #expect(TransferName.isSafe(path: path) == safe)
  }

  @Test func longNamesAreShortenedAtACharacterBoundaryKeepingTheExtension() {
    let long = String(repeating: "é", count: 150) + ".tar.gz"
    let shortened = TransferName.components(of: long)[0]
    #expect(shortened.utf8.count <= TransferName.maximumComponentBytes)
    #expect(shortened.hasSuffix(".gz"))
    #expect(shortened.hasPrefix("éé"))
    #expect(TransferName.components(of: String(repeating: "a", count: 300))[0].utf8.count == 200)
    #expect(TransferName.components(of: String(repeating: "👋", count: 80))[0].utf8.count == 200)
  }

  @Test func numbersGoBeforeTheExtension() {
    #expect(TransferName.numbered("notes.txt", 2) == "notes (2).txt")
    #expect(TransferName.numbered("photos", 3) == "photos (3)")
    #expect(TransferName.numbered(".bashrc", 2) == ".bashrc (2)")
    #expect(TransferName.numbered("notes.txt", 1) == "notes.txt")
  }

  @Test func withinAnOfferPathsAreUniqueAndNoFileStandsWhereAFolderIsNeeded() throws {
    let files = [
      OfferedFile(name: "a", size: 1), OfferedFile(name: "a/b", size: 1), OfferedFile(name: "A/c", size: 1), OfferedFile(name: "x/y", size: 1),
      OfferedFile(name: "x", size: 1), OfferedFile(name: "../x/y", size: 1), OfferedFile(name: "dir", size: 0, isDirectory: true),
      OfferedFile(name: "dir", size: 3),
    ]
    let paths = try TransferName.paths(for: files).get()
    #expect(paths == [["a"], ["a (2)", "b"], ["A (2)", "c"], ["x", "y"], ["x (2)"], ["x", "y (2)"], ["dir"], ["dir (2)"]])
  }

  /// A hostile offer: 4 096 entries of one 200-byte name (under the 1 MiB of a FILE frame).
  /// Each gets its own number, in order. (The search for a free number started from 2 for
  /// each entry: about eight million names built, minutes of the session's thread.)
  @Test func fourThousandEntriesOfOneNameAreNumberedInOrder() throws {
    let name = String(repeating: "n", count: 196) + ".txt"
    let paths = try TransferName.paths(for: Array(repeating: OfferedFile(name: name, size: 1), count: 4096)).get()
    #expect(paths.count == 4096)
    #expect(Set(paths.map { $0.joined(separator: "/") }).count == 4096, "every entry has a path of its own")
    for (index, path) in paths.enumerated() {
      #expect(path == [TransferName.numbered(name, index + 1)])
      guard path == [TransferName.numbered(name, index + 1)] else { break }
    }
  }

  /// The paths of random offers (a few names, folders and files mixed, in any case) are those
  /// of the search from 2 that came before, entry by entry.
  @Test(arguments: 0..<40)
  func pathsAreThoseOfTheSearchFromTheStart(seed: Int) throws {
    var random = SeededGenerator(seed: UInt64(seed))
    let names = ["a", "A", "a/b", "a/B", "b", "a (2)", "a (2)/b", "x/y/z", "x", "x/y", "X/Y", "n.txt", "n (2).txt", "N.TXT"]
    let files = (0..<Int(random.next() % 60 + 1)).map { _ in
      let name = names[Int(random.next() % UInt64(names.count))]
      return random.next() % 5 == 0 ? OfferedFile(name: name, size: 0, isDirectory: true) : OfferedFile(name: name, size: 1)
    }
    #expect(try TransferName.paths(for: files).get() == Self.searchedFromTheStart(files), "\(files.map(\.name))")
  }

  /// How paths were found before: for each entry, numbers tried from 2.
  static func searchedFromTheStart(_ files: [OfferedFile]) -> [[String]] {
    func key(_ path: ArraySlice<String>) -> String { path.joined(separator: "/").lowercased() }
    var kinds: [String: Bool] = [:]
    var result: [[String]] = []
    for file in files {
      var path = TransferName.components(of: file.name)
      for level in 0..<(path.count - 1) {
        var number = 1
        let base = path[level]
        while kinds[key(path[0...level])] == false {
          number += 1
          path[level] = TransferName.numbered(base, number)
        }
        kinds[key(path[0...level])] = true
      }
      let base = path[path.count - 1]
      var number = 1
      while kinds[key(path[...])] != nil {
        number += 1
        path[path.count - 1] = TransferName.numbered(base, number)
      }
      kinds[key(path[...])] = file.isDirectory
      result.append(path)
    }
    return result
  }

  @Test func anOfferTooDeepIsRefused() {
    let deep = (0..<40).map { "d\($0)" }.joined(separator: "/")
    guard case .failure(.tooDeep) = TransferName.paths(for: [OfferedFile(name: deep, size: 1)]) else {
      Issue.record("accepted a name 40 folders deep")
      return
    }
  }
}
