import NearbyCore
import NearbyTransport

/// Diagnostics for the benchmark: what handing an event to a consumer costs — published on
/// an I/O thread, taken by a task that prefers that thread's executor, which answers by
/// publishing the next one (a ping-pong inside one thread).
package enum EventHubProbe {
  /// - Returns: nanoseconds per event.
  package static func nanosecondsPerEvent(count: Int) async throws -> Double {
    let loop = try EventLoop(name: "nearby-probe")
    let executor = EventLoopTaskExecutor(loop)
    let hub = EventHub()
    let event = HubEvent.session(.status(.listening(port: 1)))
    let clock = ContinuousClock()
    let elapsed = await Task(executorPreference: executor) { () -> Duration in
      var iterator = SessionEvents(hub: hub).makeAsyncIterator()
      let start = clock.now
      for _ in 0..<count {
        hub.publish(event)
        _ = await iterator.next()
      }
      return clock.now - start
    }.value
    await loop.shutdown()
    return Double(elapsed.components.seconds) * 1e9 / Double(count) + Double(elapsed.components.attoseconds) / 1e9 / Double(count)
  }

  /// Like ``nanosecondsPerEvent(count:)``, but the consumer waits for each event (a
  /// continuation resumed by a publisher running as the loop's own work).
  package static func nanosecondsPerWakeUp(count: Int) async throws -> Double {
    let loop = try EventLoop(name: "nearby-probe")
    let executor = EventLoopTaskExecutor(loop)
    let hub = EventHub()
    let event = HubEvent.session(.status(.listening(port: 1)))
    let clock = ContinuousClock()
    let elapsed = await Task(executorPreference: executor) { () -> Duration in
      var iterator = SessionEvents(hub: hub).makeAsyncIterator()
      let start = clock.now
      for _ in 0..<count {
        loop.execute { hub.publish(event) }
        _ = await iterator.next()
      }
      return clock.now - start
    }.value
    await loop.shutdown()
    return Double(elapsed.components.seconds) * 1e9 / Double(count) + Double(elapsed.components.attoseconds) / 1e9 / Double(count)
  }
}
