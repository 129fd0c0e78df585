import Nearby
import NearbyChat
import NearbyDiscovery
import NearbySystem
import NearbyTransport

/// `nearby browse`: prints peers as they are found and lost.
public enum BrowseCommand {
  /// - Returns: the exit code: 0, or 1 when the daemon is missing or the I/O thread fails.
  public static func run(service: ServiceType, timeout: Duration?, json: Bool, signals: AsyncStream<Int32>?, output: OutputWriter = .standardOutput)
    async -> Int32
  {
    let loop: EventLoop
    do {
      loop = try EventLoop()
    } catch {
      OutputWriter.standardError.line("Error: \(error)")
      return 1
    }
    let browser = Browser(serviceType: service, loop: loop)
    browser.start()
    let code: Int32 = await withTaskGroup(of: Int32?.self) { group in
      group.addTask {
        for await event in browser.events {
          switch event {
          case .found(let peer):
            output.line(json ? EventFormatter.discoveredJSON("found", peer).encoded : EventFormatter.discoveredText("found", peer))
          case .updated(let peer):
            output.line(json ? EventFormatter.discoveredJSON("updated", peer).encoded : EventFormatter.discoveredText("updated", peer))
          case .lost(let peer):
            output.line(
              json
                ? JSONValue.object([("event", .string("lost")), ("peer", EventFormatter.peerJSON(peer))]).encoded
                : "* lost \(EventFormatter.label(peer))")
          case .notANearbyPeer(let instance, let reason):
            output.line(
              json
                ? JSONValue.object([("event", .string("foreign")), ("instance", .string(instance)), ("reason", .string(reason))]).encoded
                : "* ignoring '\(EventFormatter.sanitize(instance))': not a Nearby peer (\(EventFormatter.sanitize(reason)))")
          case .failed(let error):
            OutputWriter.standardError.line("Error: \(error)")
            return 1
          }
        }
        return nil
      }
      if let timeout {
        group.addTask {
          try? await Task.sleep(for: timeout)
          return Task.isCancelled ? nil : 0
        }
      }
      if let signals {
        group.addTask {
          for await signal in signals where signal == SIGINT || signal == SIGTERM { return 0 }
          return nil
        }
      }
      var result: Int32 = 0
      while let next = await group.next() {
        if let next {
          result = next
          break
        }
      }
      group.cancelAll()
      return result
    }
    browser.finish()
    await loop.shutdown()
    return code
  }
}

#if canImport(Glibc)
  import Glibc
#endif
