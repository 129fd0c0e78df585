import NearbyCore
import NearbySystem
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
      host: "127.0.0.1", loop: loop, security: .ephemeral(), nextID: { ConnectionID(counter.add(1, ordering: .relaxed).oldValue) },
      sink: { serverContinuation.yield($0) })
    _ = TCPConnector.connect(
      ConnectionID(1 << 62), to: [Endpoint(host: "127.0.0.1", port: listener.port)], loop: loop, security: .ephemeral(),
      sink: { clientContinuation.yield($0) })
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
          // Queued on the loop, the only thread that touches a connection.
          if let server { loop.execute { for frame in frames { _ = server.send(frame) } } }
        default: break
        }
      }
    }
    var times: [Duration] = []
    let clock = ContinuousClock()
    let frame = Frame.ping(nonce: 1)
    let connection = client!
    for _ in 0..<rounds {
      let start = clock.now
      loop.execute { _ = connection.send(frame) }
      while let event = await clientEvents.next() {
        if case .frames = event { break }
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

extension TransportProbe {
  /// Ping-pong through the transport alone with both ends answering on their I/O threads
  /// (two loops, as two sessions have): the floor under the session's round trip.
  static func pingPongOnLoops(rounds: Int) async throws -> Percentiles {
    let serverLoop = try EventLoop(name: "probe-server")
    let clientLoop = try EventLoop(name: "probe-client")
    let counter = Atomic<UInt64>(1)
    let times = Mutex<[Duration]>([])
    let done = Gate()
    let listener = try await TCPListener.bind(
      host: "127.0.0.1", loop: serverLoop, security: .ephemeral(), nextID: { ConnectionID(counter.add(1, ordering: .relaxed).oldValue) },
      sink: { event in
        if case .frames(let id, let frames) = event {
          for frame in frames { _ = ProbeConnections.shared.withLock { $0[id] }?.send(frame) }
        } else if case .accepted(let connection) = event {
          ProbeConnections.shared.withLock { $0[connection.id] = connection }
        }
      })
    let clock = ContinuousClock()
    let started = Mutex(clock.now)
    let client = Mutex<TCPConnection?>(nil)
    _ = TCPConnector.connect(
      ConnectionID(1 << 62), to: [Endpoint(host: "127.0.0.1", port: listener.port)], loop: clientLoop,
      security: .ephemeral(),
      sink: { event in
        switch event {
        case .connected(let connection):
          client.withLock { $0 = connection }
          started.withLock { $0 = clock.now }
          _ = connection.send(.ping(nonce: 1))
        case .frames:
          let now = clock.now
          let count = times.withLock { times -> Int in
            times.append(now - started.withLock { $0 })
            return times.count
          }
          if count >= rounds {
            done.open()
          } else {
            started.withLock { $0 = clock.now }
            _ = client.withLock { $0 }?.send(.ping(nonce: 1))
          }
        default: break
        }
      })
    await done.wait()
    client.withLock { $0 }?.close(.now)
    listener.close()
    await clientLoop.shutdown()
    await serverLoop.shutdown()
    ProbeConnections.shared.withLock { $0 = [:] }
    return Percentiles(times.withLock { $0 })
  }
}

/// The probe server's connections, by id.
enum ProbeConnections {
  static let shared = Mutex<[ConnectionID: TCPConnection]>([:])
}
