import Nearby
import NearbyTransport
import Synchronization

/// Diagnostics for the benchmark: the transport alone (no session), ping-pong.
enum TransportProbe {
  static func pingPong(rounds: Int) async throws -> Percentiles {
    let loop = try EventLoop()
    let (serverStream, serverContinuation) = AsyncStream.makeStream(of: TransportEvent.self)
    let (clientStream, clientContinuation) = AsyncStream.makeStream(of: TransportEvent.self)
    let counter = Atomic<UInt64>(1)
    let listener = try await TCPListener.bind(
      host: "127.0.0.1", loop: loop, nextID: { ConnectionID(counter.add(1, ordering: .relaxed).oldValue) }, sink: { serverContinuation.yield($0) })
    _ = TCPConnector.connect(
      ConnectionID(1 << 62), to: [Endpoint(host: "127.0.0.1", port: listener.port)], loop: loop, sink: { clientContinuation.yield($0) })
    var client: TCPConnection?
    var clientEvents = clientStream.makeAsyncIterator()
    while let event = await clientEvents.next() {
      if case .connected(let c) = event {
        client = c
        break
      }
    }
    let echo = Task {
      var server: TCPConnection?
      for await event in serverStream {
        switch event {
        case .accepted(let c): server = c
        case .frames(_, let frames):
          for frame in frames { _ = server?.send(frame) }
          server?.batchConsumed()
        default: break
        }
      }
    }
    var times: [Duration] = []
    let clock = ContinuousClock()
    let frame = Frame.ping(nonce: 1)
    for _ in 0..<rounds {
      let start = clock.now
      _ = client!.send(frame)
      while let event = await clientEvents.next() {
        if case .frames = event {
          client!.batchConsumed()
          break
        }
      }
      times.append(clock.now - start)
    }
    echo.cancel()
    client!.close(.now)
    listener.close()
    serverContinuation.finish()
    await loop.shutdown()
    return Percentiles(times)
  }
}
