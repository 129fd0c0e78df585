import Testing

/// The soak's verdict on what the hub printed (no lab runs here: the lines are made up).
@Suite("The soak's report on the hub's lines")
struct SoakReportTests {
  static func run(_ hub: [String]) -> TimedLabRun {
    var lines: [TimedLabRun.Line] = []
    for (index, text) in hub.enumerated() { lines.append(TimedLabRun.Line(at: .seconds(index), text: "hub | " + text)) }
    lines.append(TimedLabRun.Line(at: .seconds(99), text: "p1  | {\"event\":\"delivered\",\"id\":5,\"peer\":{\"id\":\"bbbb\"}}"))
    return TimedLabRun(status: 0, lines: lines, elapsed: .seconds(100))
  }

  static let sent = #"{"event":"sent","id":5,"to":[{"id":"aaaa","name":"p1"},{"id":"bbbb","name":"p2"}]}"#

  @Test func aMessageToAPeerThatNeverAnswersIsNamedWithWhatTheHubSaidAboutIt() {
    let report = SoakReport(Self.run([Self.sent, #"{"event":"delivered","id":5,"peer":{"id":"aaaa","name":"p1"}}"#]))
    let problem = report.problems.first { $0.contains("neither delivered nor reported failed") }
    #expect(problem?.contains(#"["5 bbbb"]"#) == true, "\(report.problems)")
    // Its own lines and the other recipients' answers: whether it was sent, and to whom.
    #expect(problem?.contains("the hub's lines about 5 bbbb (2):\n" + Self.sent + "\n") == true, "\(report.problems)")
  }

  @Test func deliveriesAndFailuresSettleEveryRecipient() {
    let report = SoakReport(
      Self.run([
        Self.sent, #"{"event":"delivered","id":5,"peer":{"id":"aaaa","name":"p1"}}"#,
        #"{"event":"error","message":"not delivered","id":5,"peer":{"id":"bbbb","name":"p2"}}"#,
      ]))
    #expect(!report.problems.contains { $0.contains("neither delivered") }, "\(report.problems)")
    #expect(report.delivered == 1 && report.failed == 1)
  }
}
