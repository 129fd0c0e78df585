// hello-nearby: two programs on one LAN find each other, connect, send one message each way,
// wait until each message is confirmed delivered, and leave. Everything it uses comes from
// `import Nearby`. See README.md beside Package.swift.
import Nearby

#if canImport(Glibc)
  import Glibc
#endif

let arguments = Array(CommandLine.arguments.dropFirst())
if arguments.contains("--help") || arguments.contains("-h") {
  say(Options.usage)
  exit(0)
}
let options: Options
do {
  options = try Options(arguments, environment: Options.processEnvironment())
} catch {
  printError("\(error)\n\(Options.usage)")
  exit(64)
}
exit(await helloNearby(options))

/// Runs one side of the exchange. - Returns: the exit code (0 done, 1 failed).
func helloNearby(_ options: Options) async -> Int32 {
  // Who we are: a stable id kept in a state directory (locked while we run).
  let identity: PeerIdentity
  do {
    identity = try PeerIdentity(directory: options.stateDirectory)
  } catch {
    printError("\(error)")
    return 1
  }
  var configuration = SessionConfiguration(identity: identity, name: options.name)
  configuration.serviceType = options.service
  let session: NearbySession
  do {
    session = try NearbySession(configuration: configuration)
  } catch {
    printError("cannot create the session: \(error)")
    return 1
  }

  return await withTaskGroup(of: Void.self) { group in
    // The session lives while run() runs: it listens, advertises us and browses for peers.
    group.addTask {
      do {
        try await session.run()
      } catch {
        printError("the session could not start: \(error)")
      }
    }
    // A deadline: shutting the session down ends its events, and the loop below says what
    // it was still waiting for.
    group.addTask {
      guard (try? await Task.sleep(for: options.timeout)) != nil else { return }
      await session.shutdown()
    }
    var exchange = Exchange(options: options)
    var code: Int32? = nil
    for await event in session.events {
      code = await exchange.handle(event, session: session)
      if code != nil { break }
    }
    if code == nil {
      printError("\(exchange.timedOut ? "timed out" : "the session stopped") \(exchange.stillWaiting)")
    }
    // Leave: GOODBYE to the peer, advertisement withdrawn, sockets and threads closed.
    await session.shutdown()
    group.cancelAll()
    return code ?? 1
  }
}

/// A line on stdout at once (also when stdout is a pipe, as in `nearby lab`).
func say(_ text: String) { writeLine(text, to: STDOUT_FILENO) }

/// A line on stderr, after the program's name.
func printError(_ text: String) { writeLine("hello-nearby: " + text, to: STDERR_FILENO) }

func writeLine(_ text: String, to descriptor: Int32) {
  var line = text + "\n"
  line.withUTF8 { bytes in
    var offset = 0
    while offset < bytes.count {
      let written = write(descriptor, bytes.baseAddress! + offset, bytes.count - offset)
      guard written > 0 else { return }
      offset += written
    }
  }
}
