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

  @Test func aNameAtTheStartOfAMessageIsAddressed() {
    #expect(complete("bo") == .replace(0..<2, with: "bob: "))
    #expect(complete("B") == .replace(0..<1, with: "bob: "))
    #expect(complete("ali") == .replace(0..<3, with: "alic"))
    #expect(complete("alic") == .candidates(["alice", "alicia"]))
    #expect(complete("Bo", names: ["Bo Diddley"]) == .replace(0..<2, with: "Bo Diddley: "))
  }

  @Test func afterACommandTheNamesItActsOnComeFirst() {
    let inviting: (String) -> [String]? = { $0 == "/accept" ? ["alicia"] : nil }
    #expect(
      Completion.complete(Array("/accept a"), cursor: 9, commands: ChatCommand.names, names: ["alice", "alicia"], argumentNames: inviting)
        == .replace(8..<9, with: "alicia "))
    #expect(
      Completion.complete(Array("/msg a"), cursor: 6, commands: ChatCommand.names, names: ["alice", "alicia"], argumentNames: inviting)
        == .replace(5..<6, with: "alic"))
    // The command's names do not match: all names do.
    #expect(
      Completion.complete(Array("/accept b"), cursor: 9, commands: ChatCommand.names, names: ["bob"], argumentNames: inviting)
        == .replace(8..<9, with: "bob "))
  }

  @Test func severalMatchesWithNothingMoreInCommonAreListed() {
    #expect(complete("hi b", names: ["bob", "Bo Diddley"]) == .replace(3..<4, with: "bo"))
    #expect(complete("hi bo", names: ["bob", "Bo Diddley"]) == .candidates(["bob", "Bo Diddley"]))
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
