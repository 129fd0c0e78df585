import NearbyChat
import NearbyTerminalUI
import Testing

@Suite struct CompletionTests {
  func complete(_ line: String, cursor: Int? = nil, names: [String] = ["alice", "alicia", "bob"]) -> Completion.Outcome {
    let characters = Array(line)
    return Completion.complete(characters, cursor: cursor ?? characters.count, commands: ChatCommand.names, names: names)
  }

  @Test func commands() {
    #expect(complete("/inv") == .replace(0..<4, with: "/invit"))
    #expect(complete("/invite") == .replace(0..<7, with: "/invite "))
    #expect(complete("/") == .candidates(ChatCommand.names))
    #expect(complete("/wh") == .replace(0..<3, with: "/who "))
    #expect(complete("/q") == .replace(0..<2, with: "/quit "))
    #expect(complete("/zz") == .none)
  }

  @Test func peerNames() {
    #expect(complete("/invite b") == .replace(8..<9, with: "bob "))
    #expect(complete("/invite B") == .replace(8..<9, with: "bob "))
    #expect(complete("/msg ali") == .replace(5..<8, with: "alic"))
    #expect(complete("/msg alic") == .candidates(["alice", "alicia"]))
    #expect(complete("hi bo") == .replace(3..<5, with: "bob "))
  }

  @Test func severalMatchesWithNothingMoreInCommonAreListed() {
    #expect(complete("b", names: ["bob", "Bo Diddley"]) == .replace(0..<1, with: "bo"))
    #expect(complete("bo", names: ["bob", "Bo Diddley"]) == .candidates(["bob", "Bo Diddley"]))
  }

  @Test func namesWithSpacesAreQuoted() {
    #expect(complete("/invite ", names: ["Bo Diddley"]) == .replace(8..<8, with: "\"Bo Diddley\" "))
    #expect(complete("/invite Bo", names: ["Bo Diddley"]) == .replace(8..<10, with: "\"Bo Diddley\" "))
    #expect(complete("/invite \"Bo D", names: ["Bo Diddley"]) == .replace(8..<13, with: "\"Bo Diddley\" "))
  }

  @Test func inTheMiddleOfALineNoSpaceIsAdded() {
    #expect(complete("/msg b hello", cursor: 6) == .replace(5..<6, with: "bob"))
  }
}
