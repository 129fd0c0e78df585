import NearbyChat
import NearbyCore
import Testing

@testable import NearbyTerminalUI

/// Scrolling a conversation: PgUp/PgDn, Home/End on an empty input, arrivals that do not
/// move a scrolled view, the bound on what is kept, and searching with /search and Ctrl-R.
/// The log has 10 rows (60×12).
@Suite struct ScrollbackTests {
  static func chat(lines: Int, scrollback: Int = 10_000, marking: Set<Int> = []) -> ChatScreenHarness {
    var chat = ChatScreenHarness(scrollback: scrollback)
    for index in 1...lines {
      chat.receive(Fixtures.message(marking.contains(index) ? "line \(index) lunch?" : "line \(index)", from: Fixtures.bob))
    }
    return chat
  }

  static func lines(_ range: ClosedRange<Int>, marking: Set<Int> = []) -> [String] {
    range.map { marking.contains($0) ? "  bob: line \($0) lunch?" : "  bob: line \($0)" }
  }

  @Test func pageUpShowsEarlierLinesAndArrivalsDoNotMoveTheView() {
    var chat = Self.chat(lines: 40)
    #expect(chat.log == Self.lines(31...40))
    chat.type(Keys.pageUp)
    #expect(chat.log == Self.lines(22...31), "a page is the log's height less one row")
    #expect(chat.statusBar.hasPrefix("[1:all] │ -- scrolled up (End) -- │"))
    let before = chat.log
    chat.receive(Fixtures.message("new arrival", from: Fixtures.bob))
    chat.receive(Fixtures.message("and another", from: Fixtures.carol))
    #expect(chat.log == before)
    #expect(chat.statusBar.hasPrefix("[1:all] │ -- 2 new below (End) -- │"))
    chat.type(Keys.pageDown)
    #expect(chat.log == Self.lines(31...40))
    chat.type(Keys.pageDown)
    #expect(chat.log.suffix(2) == ["  bob: new arrival", "  carol: and another"])
    #expect(chat.statusBar.hasPrefix("[1:all] │ alice:"), "following the newest lines again")
  }

  @Test func homeAndEndMoveTheLogWhenTheInputIsEmpty() {
    var chat = Self.chat(lines: 40)
    chat.type(Keys.home)
    #expect(chat.log == Self.lines(1...10))
    chat.type(Keys.pageUp)
    #expect(chat.log == Self.lines(1...10), "not above the oldest line")
    chat.type(Keys.end)
    #expect(chat.log == Self.lines(31...40))
    // With text in the input, Home and End move in the line.
    chat.type("abc" + Keys.home)
    #expect(chat.log == Self.lines(31...40))
    #expect(chat.cursor == (11, 6))
  }

  @Test func aShortLogDoesNotScroll() {
    var chat = Self.chat(lines: 5)
    chat.type(Keys.pageUp + Keys.home)
    #expect(chat.logContent == Self.lines(1...5))
    #expect(chat.shown.scroll == nil)
  }

  @Test func scrollbackIsBounded() {
    var chat = Self.chat(lines: 80, scrollback: 50)
    #expect(chat.shown.entries.count == 50)
    chat.type(Keys.home)
    #expect(chat.log == Self.lines(31...40))
    // Scrolled to the oldest line, the view keeps to what is kept as old lines go.
    for index in 81...85 { chat.receive(Fixtures.message("line \(index)", from: Fixtures.bob)) }
    #expect(chat.log == Self.lines(36...45))
  }

  @Test func aScrolledViewStaysOnItsLinesThroughAResize() {
    var chat = Self.chat(lines: 40)
    chat.type(Keys.pageUp + Keys.pageUp)
    #expect(chat.log.last == "  bob: line 22")
    chat.resize(columns: 80, rows: 20)
    #expect(chat.log.last == "  bob: line 22")
    #expect(chat.log.count == 18)
  }

  @Test func searchJumpsBetweenMatchesAndEndGoesBack() {
    let marking: Set<Int> = [5, 20, 35]
    var chat = Self.chat(lines: 40, marking: marking)
    chat.type("/search lunch\r")
    #expect(chat.takeSubmitted() == [], "/search is the terminal chat's own")
    #expect(chat.shown.match == chat.shown.firstSerial + 34, "the newest match (not the echo of /search)")
    #expect(chat.statusBar.hasPrefix("[1:all] │ match for \"lunch\" │"))
    chat.type(Keys.ctrl("r"))
    #expect(chat.log.last == "  bob: line 20 lunch?")
    #expect(chat.lastRow == "search: lunch")
    chat.type(Keys.ctrl("r"))
    #expect(chat.log == Self.lines(1...10, marking: marking), "as low as it goes: the oldest lines at the top")
    chat.type(Keys.ctrl("r"))
    #expect(chat.terminal.bells == 1, "no older match")
    #expect(chat.log == Self.lines(1...10, marking: marking))
    chat.type(Keys.ctrl("s"))
    #expect(chat.log.last == "  bob: line 20 lunch?")
    chat.type(Keys.enter)
    #expect(chat.lastRow == "[all]")
    #expect(chat.log.last == "  bob: line 20 lunch?", "Enter keeps the view")
    // Arrivals do not move it either.
    chat.receive(Fixtures.message("lunch now!", from: Fixtures.carol))
    #expect(chat.log.last == "  bob: line 20 lunch?")
    chat.type(Keys.end)
    #expect(chat.log.last == "  carol: lunch now!")
    #expect(chat.shown.match == nil)
    chat.type("/search dinner\r")
    #expect(chat.log.last == "! no line of this conversation has \"dinner\"")
  }

  @Test func ctrlRSearchesAsYouType() {
    var chat = Self.chat(lines: 40, marking: [12, 33])
    chat.type(Keys.ctrl("r"))
    #expect(chat.lastRow == "search:")
    chat.type("lun")
    #expect(chat.shown.match == chat.shown.firstSerial + 32)
    #expect(chat.statusBar.hasPrefix("[1:all] │ search: Ctrl-R older, Ctrl-S newer │"))
    chat.type(Keys.ctrl("r"))
    #expect(chat.log.last == "  bob: line 12 lunch?")
    chat.type("x")
    #expect(chat.statusBar.hasPrefix("[1:all] │ no line has \"lunx\""))
    #expect(chat.terminal.bells == 1)
    // Escape: back to the newest lines and the input line as it was.
    chat.type(Keys.backspace + Keys.ctrl("g"))
    #expect(chat.lastRow == "[all]")
    #expect(chat.log == Self.lines(31...40, marking: [33]))
    #expect(chat.model.searchTerm == "lun")
  }

  @Test func matchesAreHighlighted() {
    var chat = ChatScreenHarness(color: true)
    chat.receive(Fixtures.message("what about lunch?", from: Fixtures.bob))
    chat.receive(Fixtures.message("later", from: Fixtures.bob))
    chat.type("/search LUNCH\r")
    #expect(chat.written.contains("\u{1B}[7mlunch\u{1B}[0m"))
  }
}
