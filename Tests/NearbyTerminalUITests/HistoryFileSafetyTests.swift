import Foundation
import Testing

@testable import NearbyTerminalUI

#if canImport(Glibc)
  import Glibc
#endif

@Suite struct HistoryFileSafetyTests {
  @Test func aHistoryPlantedAsASymlinkIsNeitherReadNorWritten() throws {
    var template = Array("/tmp/nearby-history-XXXXXX".utf8CString)
    let directory = template.withUnsafeMutableBufferPointer { String(cString: mkdtemp($0.baseAddress!)) }
    let target = directory + "/elsewhere"
    try "secret line\n".write(toFile: target, atomically: false, encoding: .utf8)
    symlink(target, directory + "/history")
    let file = HistoryFile(directory: directory, capacity: 1)
    #expect(file.load().isEmpty, "the target was read")
    file.append("typed")
    file.append("typed again")
    #expect(try String(contentsOfFile: target, encoding: .utf8) == "secret line\n")
  }
}
