import Foundation
import NearbyChat
import NearbyTerminalUI
import Testing

@Suite struct InputHistoryTests {
  @Test func upAndDownKeepTheDraft() {
    var history = InputHistory(["one", "two"])
    let steps = [
      history.previous(current: "draft"), history.previous(current: "two"), history.previous(current: "one"), history.next(),
      history.next(), history.next(),
    ]
    #expect(steps == ["two", "one", nil, "two", "draft", nil])
  }

  @Test func emptyAndRepeatedLinesAreNotAdded() {
    var history = InputHistory()
    let added = [history.add("a"), history.add("a"), history.add("   "), history.add("b")]
    #expect(added == [true, false, false, true])
    #expect(history.entries == ["a", "b"])
  }

  @Test func capacityKeepsTheNewest() {
    var history = InputHistory(["1", "2", "3"], capacity: 2)
    #expect(history.entries == ["2", "3"])
    history.add("4")
    #expect(history.entries == ["3", "4"])
  }

  @Test func fileKeepsEntriesAcrossRunsAndStaysSmall() throws {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("nearby-history-\(UUID().uuidString)").path
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let file = HistoryFile(directory: directory, capacity: 3)
    #expect(file.load() == [])
    for index in 1...10 { file.append("line \(index)") }
    file.append("with\nnewline")
    let loaded = file.load()
    #expect(loaded == ["line 9", "line 10", "withnewline"])
    let onDisk = try String(contentsOfFile: file.path, encoding: .utf8).split(separator: "\n")
    #expect(onDisk.count <= 6)
    let attributes = try FileManager.default.attributesOfItem(atPath: file.path)
    #expect((attributes[.posixPermissions] as? Int) == 0o600)
  }
}
