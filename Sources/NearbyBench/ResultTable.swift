/// Prints results as a table or as JSON lines.
public enum ResultTable {
  public static func text(_ results: [BenchmarkResult]) -> String {
    func number(_ value: Double) -> String {
      if value >= 100_000 { return String(Int(value.rounded())) }
      if value >= 100 { return String(Int(value.rounded())) }
      let scaled = (value * 100).rounded() / 100
      return String(scaled)
    }
    var rows: [[String]] = [["benchmark", "figure", "ours", "baseline", "ratio", "baseline is"]]
    for result in results {
      rows.append([
        result.name, result.figure, "\(number(result.ours)) \(result.unit)", result.baseline.map { "\(number($0)) \(result.unit)" } ?? "-",
        result.ratio.map { String((($0 * 100).rounded()) / 100) + "x" } ?? "-", result.baselineName ?? "",
      ])
    }
    let widths = (0..<rows[0].count).map { column in rows.map { $0[column].count }.max()! }
    return rows.map { row in
      row.enumerated().map { $0.element + String(repeating: " ", count: widths[$0.offset] - $0.element.count) }.joined(separator: "  ")
    }.joined(separator: "\n") + "\n"
  }

  public static func json(_ results: [BenchmarkResult]) -> String {
    results.map { result in
      var fields = [
        "\"benchmark\":\"\(result.name)\"", "\"figure\":\"\(result.figure)\"", "\"unit\":\"\(result.unit)\"", "\"ours\":\(result.ours)",
      ]
      if let baseline = result.baseline { fields.append("\"baseline\":\(baseline)") }
      if let name = result.baselineName { fields.append("\"baselineName\":\"\(name)\"") }
      if let ratio = result.ratio { fields.append("\"ratio\":\(ratio)") }
      fields.append("\"higherIsBetter\":\(result.higherIsBetter)")
      return "{" + fields.joined(separator: ",") + "}"
    }.joined(separator: "\n") + "\n"
  }
}
