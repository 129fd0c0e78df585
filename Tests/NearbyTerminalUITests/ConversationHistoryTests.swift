import Foundation
import NearbyChat
import NearbyCore
import Testing

@testable import NearbyTerminalUI

#if canImport(Glibc)
  import Glibc
#endif

/// A temporary state directory (mode 0700), removed at the end.
struct StateDirectoryFixture: ~Copyable {
  let path: String

  init() throws {
    path = FileManager.default.temporaryDirectory.appendingPathComponent("nearby-logs-\(UUID().uuidString)").path
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
  }

  deinit { try? FileManager.default.removeItem(atPath: path) }

  func mode(_ name: String) throws -> Int {
    (try FileManager.default.attributesOfItem(atPath: path + "/" + name)[.posixPermissions] as? Int) ?? -1
  }
}

/// The history of the conversations: records on disk, kept safely and bounded, and shown
/// again when a conversation opens.
@Suite struct ConversationHistoryTests {
  @Test func recordsSurviveTabsNewlinesAndBackslashes() {
    let record = LogRecord(
      time: 1_700_000_000_123, kind: .received, peer: Fixtures.bob.id, name: "bob\tthe\\builder", messageID: 42, text: "one\ntwo\r\\n\tend")
    #expect(!record.encoded.contains("\n"))
    #expect(LogRecord(encoded: record.encoded) == record)
    let mark = LogRecord(time: 1, kind: .delivered, messageID: 7)
    #expect(LogRecord(encoded: mark.encoded) == mark)
    for damaged in ["", "2\t1\tr\t-\tx\t-\ty", "1\tx\tr\t-\tx\t-\ty", "1\t1\tq\t-\tx\t-\ty", "1\t1\tr\tnothex\tx\t-\ty", "1\t1\tr\t-\tx\t-\tbad\\q"] {
      #expect(LogRecord(encoded: damaged) == nil, "\(damaged)")
    }
  }

  /// A peer's escape sequences, C1 controls and bidirectional controls are written as
  /// `\u{HEX}`: `cat` or `less -R` on a history file shows them instead of running them
  /// (they were written raw). An emoji joined by U+200D stays as it is.
  @Test func hiddenCharactersAreWrittenEscapedAndReadBack() {
    let text = "\u{1B}]52;c;aGk=\u{07}\u{1B}[2J\u{9B}31m\u{202E}txt.exe 👩\u{200D}💻 \\u{41}"
    let record = LogRecord(time: 1, kind: .received, peer: Fixtures.bob.id, name: "bob", messageID: 1, text: text)
    let encoded = record.encoded
    #expect(!encoded.unicodeScalars.contains { $0.value == 0x1B || $0.value == 0x07 || $0.value == 0x9B || $0.value == 0x202E }, "\(encoded)")
    #expect(encoded.contains("\\u{1B}]52") && encoded.contains("👩\u{200D}💻"), "\(encoded)")
    #expect(LogRecord(encoded: encoded) == record)
    for damaged in ["1\t1\tr\t-\tx\t-\t\\u{1B", "1\t1\tr\t-\tx\t-\t\\u1B}", "1\t1\tr\t-\tx\t-\t\\u{110000}", "1\t1\tr\t-\tx\t-\t\\u{1234567}"] {
      #expect(LogRecord(encoded: damaged) == nil, "\(damaged)")
    }
  }

  @Test func logsAreKeptPerConversationWithMode0600() throws {
    let state = try StateDirectoryFixture()
    let logs = try ConversationLogs(stateDirectory: state.path)
    let hello = LogRecord(time: 5, kind: .received, peer: Fixtures.bob.id, name: "bob", text: "hello")
    try logs.append(hello, to: .everyone)
    try logs.append(LogRecord(time: 6, kind: .sent, name: "alice", messageID: 1, text: "psst"), to: .peer(Fixtures.bob.id))
    #expect(try logs.records(.everyone) == [hello])
    #expect(try logs.records(.peer(Fixtures.bob.id)).map(\.text) == ["psst"])
    #expect(try logs.records(.peer(Fixtures.carol.id)) == [])
    #expect(try state.mode("logs") == 0o700)
    #expect(try state.mode("logs/all.log") == 0o600)
    #expect(try state.mode("logs/\(Fixtures.bob.id.hex).log") == 0o600)
    // Another run reads the same.
    #expect(try ConversationLogs(stateDirectory: state.path).records(.everyone) == [hello])
  }

  @Test func logsAreBounded() throws {
    let state = try StateDirectoryFixture()
    let logs = try ConversationLogs(stateDirectory: state.path, capacity: 5)
    for index in 1...100 { try logs.append(LogRecord(time: UInt64(index), kind: .received, name: "bob", text: "line \(index)"), to: .everyone) }
    let lines = try String(contentsOfFile: state.path + "/logs/all.log", encoding: .utf8).split(separator: "\n")
    #expect(lines.count <= 20, "at most twice the records kept")
    let records = try ConversationLogs(stateDirectory: state.path, capacity: 5).records(.everyone)
    #expect(records.map(\.text) == (91...100).map { "line \($0)" }, "room for a mark per message")
  }

  @Test func aPlantedSymbolicLinkIsNeverFollowed() throws {
    let state = try StateDirectoryFixture()
    let target = state.path + "/elsewhere"
    #expect(FileManager.default.createFile(atPath: target, contents: Data("mine\n".utf8)))
    try FileManager.default.createDirectory(atPath: state.path + "/logs", withIntermediateDirectories: false)
    #expect(symlink(target, state.path + "/logs/all.log") == 0)
    let logs = try ConversationLogs(stateDirectory: state.path)
    #expect(throws: PrivateDirectory.Failure.self) { try logs.append(LogRecord(time: 1, kind: .sent, text: "x"), to: .everyone) }
    #expect(throws: PrivateDirectory.Failure.self) { try logs.records(.everyone) }
    #expect(try String(contentsOfFile: target, encoding: .utf8) == "mine\n")
    // The input history too.
    #expect(symlink(target, state.path + "/history") == 0)
    let history = HistoryFile(directory: state.path)
    history.append("typed")
    #expect(history.load() == [])
    #expect(try String(contentsOfFile: target, encoding: .utf8) == "mine\n")
  }

  @Test func aLogsDirectoryOthersMayWriteToIsRefused() throws {
    let state = try StateDirectoryFixture()
    try FileManager.default.createDirectory(atPath: state.path + "/logs", withIntermediateDirectories: false)
    #expect(chmod(state.path + "/logs", 0o777) == 0)
    #expect {
      try ConversationLogs(stateDirectory: state.path)
    } throws: { error in
      "\(error)".contains("others may write to it (mode 777); run chmod 700")
    }
    try FileManager.default.removeItem(atPath: state.path + "/logs")
    #expect(symlink("/tmp", state.path + "/logs") == 0)
    #expect {
      try ConversationLogs(stateDirectory: state.path)
    } throws: { error in
      "\(error)".contains("it is a symbolic link or not a directory")
    }
  }

  @Test func aFileOthersCouldReadIsTightened() throws {
    let state = try StateDirectoryFixture()
    let logs = try ConversationLogs(stateDirectory: state.path)
    try logs.append(LogRecord(time: 1, kind: .sent, text: "x"), to: .everyone)
    #expect(chmod(state.path + "/logs/all.log", 0o644) == 0)
    _ = try logs.records(.everyone)
    #expect(try state.mode("logs/all.log") == 0o600)
  }

  @Test func theModelAsksToKeepMessagesAndMarks() {
    var chat = ChatScreenHarness()
    chat.receive(Fixtures.message("hi", from: Fixtures.bob))
    chat.receive(.sent(id: 4, text: "hello", to: [Fixtures.bob], isPrivate: false))
    chat.receive(.settled(DeliveryReport(messageID: 4, recipients: 1, delivered: 0, failures: [])))
    chat.receive(Fixtures.found(Fixtures.carol))
    #expect(chat.logged.map(\.conversation) == [.everyone, .everyone, .everyone])
    #expect(chat.logged.map(\.record.kind) == [.received, .sent, .failed])
    #expect(chat.logged[0].record.peer == Fixtures.bob.id && chat.logged[0].record.text == "hi")
    #expect(chat.logged[1].record.messageID == 4 && chat.logged[1].record.text == "hello")
  }

  @Test func historyIsShownBeforeThisSessionsLinesWithTheirMarksAndDay() {
    var chat = ChatScreenHarness()
    let yesterday = chat.now - 86_400_000
    let records = [
      LogRecord(time: yesterday, kind: .received, peer: Fixtures.bob.id, name: "bob", text: "old hello"),
      LogRecord(time: yesterday + 1000, kind: .sent, name: "alice", messageID: 9, text: "old reply"),
      LogRecord(time: yesterday + 2000, kind: .delivered, messageID: 9),
      LogRecord(time: yesterday + 3000, kind: .sent, name: "alice", messageID: 10, text: "never confirmed"),
    ]
    // A line of this session comes first; the file is read after.
    chat.model = TerminalChatModel(me: Fixtures.alice, size: .init(columns: 60, rows: 12), settings: .init(color: false))
    chat.send(.start)
    chat.receive(Fixtures.message("new today", from: Fixtures.carol))
    chat.send(.restored(.everyone, records))
    let before = LocalDay(yesterday).text
    let today = LocalDay(chat.now).text
    #expect(
      chat.logContent == [
        "─── \(before) " + String(repeating: "─", count: 60 - 5 - before.count), "  bob: old hello", "✓ alice: old reply",
        ". alice: never confirmed", "─── \(today) " + String(repeating: "─", count: 60 - 5 - today.count), "  carol: new today",
      ])
    // The file was asked for once: another answer is ignored.
    chat.send(.restored(.everyone, records))
    #expect(chat.shown.entries.count == 4)
  }

  @Test func aConversationOpenedAgainShowsItsHistoryThenTheMarker() {
    var chat = ChatScreenHarness()
    chat.receive(Fixtures.message("new psst", from: Fixtures.bob, isPrivate: true))
    chat.answerLogRequests([
      .peer(Fixtures.bob.id): [LogRecord(time: Fixtures.noon, kind: .received, peer: Fixtures.bob.id, name: "bob", text: "old psst")]
    ])
    chat.type(Keys.alt("2"))
    #expect(chat.logContent == ["  bob: old psst", "─── unread " + String(repeating: "─", count: 49), "  bob: new psst"])
  }

  @Test func theDayChangesBetweenLines() {
    var chat = ChatScreenHarness()
    chat.receive(Fixtures.message("late", from: Fixtures.bob))
    chat.now += 86_400_000
    chat.receive(Fixtures.message("early", from: Fixtures.bob))
    let day = LocalDay(chat.now).text
    let before = LocalDay(chat.now - 86_400_000).text
    #expect(
      chat.logContent == [
        "─── \(before) " + String(repeating: "─", count: 60 - 5 - before.count), "  bob: late",
        "─── \(day) " + String(repeating: "─", count: 60 - 5 - day.count), "  bob: early",
      ], "the first line is not from today: its day is said too")
  }
}
