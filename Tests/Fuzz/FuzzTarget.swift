// libFuzzer entry point for the frame decoder and the state machines. Not part of the
// package build: scripts/fuzz compiles it together with Sources/NearbyCore/*.swift using
// `swiftc -sanitize=fuzzer,address -parse-as-library`.
//
// Input layout: the first byte picks how the rest is split into chunks (so every split of a
// frame gets exercised); the decoded frames are then fed to a listener-side connection
// state machine and to a session state machine, with the clock advancing per chunk.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
  let bytes = Array(UnsafeBufferPointer(start: data, count: size))
  guard let first = bytes.first else { return 0 }
  let chunk = Int(first % 32) + 1
  let decoder = FrameDecoder(maximumFrameLength: 1 << 16)
  let local = Peer(id: PeerID(high: 1, low: 1), name: try! DisplayName("fuzz"))
  var machine = ConnectionStateMachine(role: .listener, hello: Frame.Hello(peer: local), now: .zero)
  machine.start(now: .zero)
  var configuration = SessionStateMachine.Configuration(local: local)
  configuration.acceptPolicy = bytes.count % 2 == 0 ? .all : .ask
  var session = SessionStateMachine(configuration: configuration, messageIDSeed: 1, invitationIDSeed: 1)
  var actions: [SessionAction] = []
  let connection = ConnectionID(1)
  session.connectionAccepted(connection, now: .zero, into: &actions)
  var now = Duration.zero
  var index = 1
  while index < bytes.count {
    let end = min(index + chunk, bytes.count)
    decoder.append(bytes[index..<end])
    index = end
    now += .milliseconds(Int64(chunk) * 37)
    var frames: [Frame] = []
    do {
      while let frame = try decoder.next() {
        frames.append(frame)
        // Every decoded frame re-encodes to something that decodes to the same frame.
        let again = FrameDecoder()
        again.append(FrameEncoder.encode(frame))
        precondition((try? again.next()) == frame, "re-encoding changed \(frame)")
        _ = machine.receive(frame, now: now)
      }
    } catch {
      _ = machine.receiveFailed(error, now: now)
      session.received(frames, on: connection, now: now, into: &actions)
      session.receiveFailed(error, on: connection, now: now, into: &actions)
      return 0
    }
    session.received(frames, on: connection, now: now, into: &actions)
    _ = machine.tick(now: now)
    session.tick(now: now, into: &actions)
    // Actions are bounded by the input: nothing grows without limit.
    precondition(actions.count < 64 * bytes.count + 64, "unbounded actions")
  }
  do { try decoder.finish() } catch {}
  return 0
}
