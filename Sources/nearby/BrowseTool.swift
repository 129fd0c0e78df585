import Nearby
import NearbyChat
import NearbyCommandLine
import NearbySystem

#if canImport(Glibc)
  import Glibc
#endif

/// `nearby browse`: prints peers as they are found and lost (a ``NearbyBrowser``, no session).
struct BrowseTool: Tool {
  static let spec = NearbyCommands.Browse.spec

  let service: ServiceType
  let timeout: Duration?
  let json: Bool

  init(_ parsed: ParsedCommand, environment: ProcessEnvironment) throws(CommandLineError) {
    service = try parsed.value(NearbyCommands.Common.service, default: .default)
    timeout = try parsed.value(NearbyCommands.Browse.timeout)
    json = parsed.isSet(NearbyCommands.Common.json)
  }

  /// - Returns: 0, or 1 when the daemon is missing or the I/O thread fails.
  func run(signals: AsyncStream<Int32>?) async -> Int32 {
    let browser = NearbyBrowser(serviceType: service)
    let output = OutputWriter.standardOutput
    let json = self.json
    let outcome = Outcome()
    var services: [ServiceGroup.Service] = [
      .init("events", endsGroup: true) {
        for await event in browser.events {
          if let line = Self.line(for: event, json: json) { output.line(line) }
          if case .failed(let reason) = event {
            OutputWriter.standardError.line("Error: \(reason)")
            await outcome.set(1)
            return
          }
        }
      }
    ]
    if let timeout { services.append(.init("timeout", endsGroup: true) { try await Task.sleep(for: timeout) }) }
    do {
      try await ServiceGroup(
        main: .init("browser") { try await browser.run() }, alongside: services, signals: signals,
        onSignal: { signal in signal == SIGINT || signal == SIGTERM }
      ).run()
    } catch {
      return failure("\(error)")
    }
    return await outcome.code ?? 0
  }

  /// The exit code decided by a service.
  actor Outcome {
    var code: Int32?
    func set(_ value: Int32) { if code == nil { code = value } }
  }

  static func line(for event: NearbyBrowser.Event, json: Bool) -> String? {
    switch event {
    case .found(let peer):
      return json ? EventFormatter.discoveredJSON("found", peer).encoded : EventFormatter.discoveredText("found", peer)
    case .updated(let peer):
      return json ? EventFormatter.discoveredJSON("updated", peer).encoded : EventFormatter.discoveredText("updated", peer)
    case .lost(let peer):
      return json
        ? JSONValue.object([("event", .string("lost")), ("peer", EventFormatter.peerJSON(peer))]).encoded
        : "* lost \(EventFormatter.label(peer))"
    case .foreign(let instance, let reason):
      return json
        ? JSONValue.object([("event", .string("foreign")), ("instance", .string(instance)), ("reason", .string(reason))]).encoded
        : "* ignoring '\(EventFormatter.sanitize(instance))': not a Nearby peer (\(EventFormatter.sanitize(reason)))"
    case .crowded(let limit):
      return json ? EventFormatter.crowdedJSON(limit).encoded : EventFormatter.crowdedText(limit)
    case .failed:
      return nil
    }
  }
}
