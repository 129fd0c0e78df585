import NearbyScript

extension FaultScript {
  /// The steps that do not fit the lab: hosts it does not have, network faults on a
  /// loopback lab (every host shares one network there), a host that runs nothing (it prints
  /// nothing, and has no process to pause), a segment the host is not on.
  /// - Returns: an error per such step, like a parse error.
  public func problems(in plan: LabPlan) -> [ChatScriptError] {
    let names = plan.hosts.map(\.name)
    var problems: [ChatScriptError] = []
    func problem(_ step: Step, _ column: Int, _ message: String, _ hint: String) {
      problems.append(ChatScriptError(line: step.line, column: column, message: message, hint: hint, source: step.source))
    }
    for step in steps {
      let start = 1 + step.source.prefix { $0.isWhitespace }.count
      if let unknown = step.hostColumns.first(where: { !names.contains($0.name) }) {
        problem(step, unknown.column, "no host '\(unknown.name)' in this lab", "the hosts are \(names.joined(separator: ", "))")
        continue
      }
      if case .output(let host, _, _) = step.trigger, plan.hosts.first(where: { $0.name == host })?.role == .idle {
        problem(
          step, step.hostColumns.first?.column ?? start, "\(host) runs nothing, so it prints nothing",
          "give it a HOST.script or HOST.cmd, or a command after --")
        continue
      }
      let action = step.action
      if action.isProcessFault {
        if let idle = action.hosts.first(where: { name in plan.hosts.first { $0.name == name }?.role == .idle }) {
          problem(
            step, step.hostColumns.last?.column ?? start, "\(idle) runs nothing to \(action.description.split(separator: " ")[0])",
            "give it a HOST.script or HOST.cmd, or a command after --")
        }
        continue
      }
      guard case .segments(let segments) = plan.network else {
        problem(
          step, start, "\(action.description.split(separator: " ")[0]) needs hosts with networks of their own: with --loopback every host shares one",
          "use --hosts or --segments for network faults; pause, resume, kill and restart work on loopback")
        continue
      }
      if case .link(let host, _, let segment?) = action, !(segments.indices.contains(segment - 1) && segments[segment - 1].contains(host)) {
        let on = segments.indices.filter { segments[$0].contains(host) }.map { String($0 + 1) }.joined(separator: ", ")
        problem(step, start, "\(host) is not on segment \(segment)", "\(host) is on segment \(on) (segments count from 1 in the order of --segments)")
      }
    }
    return problems
  }
}
