import NearbyCore
import Testing

@Suite("Names of received files (PROTOCOL.md 13.5)")
struct TransferNameTests {
  @Test(arguments: [
    ("../x", ["x"]), ("/etc/passwd", ["etc", "passwd"]), ("a\u{0}b", ["a_b"]), ("CON", ["_CON"]), ("con.txt", ["_con.txt"]),
    ("LPT9", ["_LPT9"]), ("COM0", ["COM0"]), ("CONSOLE", ["CONSOLE"]), ("a\\b", ["a", "b"]), ("..", ["_"]), ("", ["_"]),
    ("./a/./b/", ["a", "b"]), ("a/../../b", ["a", "b"]), ("\u{202E}gpj.exe", ["_gpj.exe"]), ("tab\there", ["tab_here"]),
    ("x\u{9B}2J", ["x_2J"]), ("zero\u{200B}width", ["zero_width"]), ("Grüße 👋.txt", ["Grüße 👋.txt"]), (".bashrc", [".bashrc"]),
  ])
  func components(_ name: String, _ expected: [String]) {
    #expect(TransferName.components(of: name) == expected)
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

  @Test func anOfferTooDeepIsRefused() {
    let deep = (0..<40).map { "d\($0)" }.joined(separator: "/")
    guard case .failure(.tooDeep) = TransferName.paths(for: [OfferedFile(name: deep, size: 1)]) else {
      Issue.record("accepted a name 40 folders deep")
      return
    }
  }
}
