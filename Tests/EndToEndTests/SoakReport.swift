import Foundation

/// What the soak's hub printed: its samples (`soak-sample EPOCH rss_kb=... threads=... fds=...`)
/// and its chat's JSON events, checked for leaks and for messages lost without a report.
struct SoakReport {
  struct Sample {
    var at: Duration
    var rssKB: Int
    var threads: Int
    var fds: Int
  }

  var samples: [Sample] = []
  var problems: [String] = []
  var sent = 0
  var delivered = 0
  var failed = 0
  var received = 0
  var reconnections = 0
  var resumed = 0
  var disconnections = 0
  private var baseline: Sample?
  private var final: Sample?

  init(_ run: TimedLabRun) {
    var pending: Set<String> = []
    var seen: Set<String> = []
    var hubLines: [String] = []
    for line in run.lines(of: "hub") {
      hubLines.append(line.text)
      if line.text.hasPrefix("soak-sample ") {
        if let sample = Self.sample(line) { samples.append(sample) }
        continue
      }
      guard line.text.hasPrefix("{"), let data = line.text.data(using: .utf8),
        let object = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any], let event = object["event"] as? String
      else { continue }
      let id = (object["id"] as? NSNumber)?.stringValue
      let peer = ((object["peer"] as? [String: Any])?["id"] as? String)
      switch event {
      case "sent":
        sent += 1
        for recipient in (object["to"] as? [[String: Any]]) ?? [] {
          if let id, let recipient = recipient["id"] as? String { pending.insert("\(id) \(recipient)") }
        }
      case "delivered":
        delivered += 1
        if let id, let peer { pending.remove("\(id) \(peer)") }
      case "error":
        if let id, let peer {
          failed += 1
          pending.remove("\(id) \(peer)")
        }
      case "message":
        received += 1
        let from = (object["from"] as? [String: Any])?["id"] as? String ?? "?"
        if let id, !seen.insert("\(from) \(id)").inserted { problems.append("the hub got message \(id) from \(from) twice") }
      case "reconnecting": reconnections += 1
      case "reconnected": resumed += 1
      case "disconnected": disconnections += 1
      default: break
      }
    }
    if !pending.isEmpty {
      var problem = "\(pending.count) of the hub's messages were neither delivered nor reported failed: \(pending.sorted().prefix(10))"
      // What the hub said about the first of them, to tell a lost report from a lost message.
      for pair in pending.sorted().prefix(2) {
        let words = pair.split(separator: " ").map(String.init)
        let about = hubLines.filter { $0.contains("\"id\":\(words[0])") || $0.contains(words[1]) }
        problem += "\nthe hub's lines about \(pair) (\(about.count)):\n" + about.suffix(20).joined(separator: "\n")
      }
      problem += "\nthe hub's last lines:\n" + hubLines.suffix(15).joined(separator: "\n")
      problems.append(problem)
    }
    checkLeaks()
  }

  /// After the warm-up (a third of the run) the hub grows by at most 10%: the last sample
  /// taken while it still ran, against the largest of the samples between a fifth and two
  /// fifths of the run (the peers come and go, so one sample alone says little).
  private mutating func checkLeaks() {
    guard let last = samples.last, samples.count >= 5 else {
      problems.append("too few samples of the hub (\(samples.count))")
      return
    }
    let span = last.at - samples[0].at
    let window = samples.filter { $0.at >= samples[0].at + span / 5 && $0.at <= samples[0].at + span * 2 / 5 }
    guard !window.isEmpty else { return }
    let base = Sample(
      at: window[0].at, rssKB: window.map(\.rssKB).max()!, threads: window.map(\.threads).max()!, fds: window.map(\.fds).max()!)
    // The end: the largest of the last three samples (the hub may already be quitting in the last).
    let tail = samples.suffix(3)
    let end = Sample(at: last.at, rssKB: tail.map(\.rssKB).max()!, threads: tail.map(\.threads).max()!, fds: tail.map(\.fds).max()!)
    baseline = base
    final = end
    if Double(end.rssKB) > Double(base.rssKB) * 1.1 { problems.append("resident memory grew from \(base.rssKB) KiB to \(end.rssKB) KiB") }
    if Double(end.threads) > Double(base.threads) * 1.1 + 1 { problems.append("threads grew from \(base.threads) to \(end.threads)") }
    if Double(end.fds) > Double(base.fds) * 1.1 + 1 { problems.append("descriptors grew from \(base.fds) to \(end.fds)") }
  }

  private static func sample(_ line: TimedLabRun.Line) -> Sample? {
    var values: [String: Int] = [:]
    for field in line.text.split(separator: " ").dropFirst(2) {
      let parts = field.split(separator: "=")
      if parts.count == 2, let value = Int(parts[1]) { values[String(parts[0])] = value }
    }
    guard let rss = values["rss_kb"], let threads = values["threads"], let fds = values["fds"] else { return nil }
    return Sample(at: line.at, rssKB: rss, threads: threads, fds: fds)
  }

  var summary: String {
    var text = "hub sent \(sent) messages (\(delivered) deliveries, \(failed) failures reported), received \(received);"
    text += " \(reconnections) reconnecting, \(resumed) reconnected, \(disconnections) disconnected"
    if let baseline, let final {
      text += "; after the warm-up RSS \(baseline.rssKB) -> \(final.rssKB) KiB, threads \(baseline.threads) -> \(final.threads),"
      text += " descriptors \(baseline.fds) -> \(final.fds)"
    }
    return text
  }
}
