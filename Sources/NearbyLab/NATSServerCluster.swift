import NearbySystem
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// The configuration of a NATS cluster with JetStream on one address: node `i` listens for
/// clients on `clientPorts[i]` and for its routes on `clusterPorts[i]`, and stores in
/// `directory/nI`. Pure (the text of each node's `nats-server -c` file), so it is tested.
public struct NATSClusterPlan: Sendable, Equatable {
  public var host: String
  public var clientPorts: [UInt16]
  public var clusterPorts: [UInt16]
  public var directory: String
  public var name = "nearby"
  /// The servers' certificate and key (PEM): clients must then speak TLS.
  public var tls: NATSTLSFiles?

  public init(host: String, clientPorts: [UInt16], clusterPorts: [UInt16], directory: String) {
    precondition(clientPorts.count == clusterPorts.count, "one cluster port per node")
    self.host = host
    self.clientPorts = clientPorts
    self.clusterPorts = clusterPorts
    self.directory = directory
  }

  /// `nats://HOST:PORT` of every node, for clients.
  public var clientURLs: [String] { clientPorts.map { "nats://\(host):\($0)" } }

  /// The configuration file of node `index` (from 0; named `n1`, `n2`, ...).
  public func configuration(_ index: Int) -> String {
    var text = """
      server_name: n\(index + 1)
      listen: \(host):\(clientPorts[index])
      jetstream { store_dir: "\(directory)/n\(index + 1)" }

      """
    if let tls {
      text += """
        tls {
          cert_file: "\(tls.certificate)"
          key_file: "\(tls.key)"
        }

        """
    }
    if clientPorts.count > 1 {
      let routes = clusterPorts.map { "nats://\(host):\($0)" }.joined(separator: ", ")
      text += """
        cluster {
          name: \(name)
          listen: \(host):\(clusterPorts[index])
          routes: [\(routes)]
        }

        """
    }
    return text
  }
}

/// A server certificate and its private key, PEM files.
public struct NATSTLSFiles: Sendable, Equatable {
  public var certificate: String
  public var key: String

  public init(certificate: String, key: String) {
    self.certificate = certificate
    self.key = key
  }
}

/// NATS servers (`nats-server -c`) with JetStream on loopback, for tests and benchmarks. They
/// start only inside a private network namespace (the harness's `scripts/lan loopback`, or
/// a `nearby lab` host), never in the machine's own: ``start(nodes:)`` checks it first.
public final class NATSServerCluster: Sendable {
  public let plan: NATSClusterPlan
  private let processes: Mutex<[ChildProcess?]>
  private let executable: String

  /// Starts `nodes` servers (1: a single server, 3: a cluster) and waits until each accepts
  /// connections (JetStream may take a moment more to elect its leaders).
  /// - Throws: ``LANError`` when this is the machine's own network namespace, nats-server is
  ///   missing, or a server does not come up (its log's tail is in the message).
  public static func start(nodes: Int, environment: [String: String], tls: NATSTLSFiles? = nil) async throws(LANError) -> NATSServerCluster {
    try NamespaceGuard.assertPrivate(environment: environment)
    guard let executable = ToolPaths(environment: environment).find("nats-server") else {
      throw LANError(.toolsMissing, "nats-server is not installed (run scripts/install-deps)")
    }
    guard let directory = LabFiles.makeTemporaryDirectory() else { throw .failed("cannot create a temporary directory for nats-server") }
    var ports: [UInt16] = []
    for _ in 0..<(nodes * 2) { ports.append(try freePort()) }
    var plan = NATSClusterPlan(
      host: "127.0.0.1", clientPorts: Array(ports[0..<nodes]), clusterPorts: Array(ports[nodes...]), directory: directory)
    plan.tls = tls
    for index in 0..<nodes { try LabFiles.write(plan.configuration(index), to: directory + "/n\(index + 1).conf") }
    let cluster = NATSServerCluster(plan: plan, executable: executable)
    for index in 0..<nodes { try cluster.launch(index) }
    for index in 0..<nodes { try await cluster.waitUntilListening(index) }
    return cluster
  }

  private init(plan: NATSClusterPlan, executable: String) {
    self.plan = plan
    self.executable = executable
    self.processes = Mutex(Array(repeating: nil, count: plan.clientPorts.count))
  }

  private func launch(_ index: Int) throws(LANError) {
    let log = open(plan.directory + "/n\(index + 1).log", O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
    guard log >= 0 else { throw .failed("cannot open the log of nats-server n\(index + 1)") }
    defer { close(log) }
    do {
      let child = try ChildProcess(
        executable, ["-c", plan.directory + "/n\(index + 1).conf"], standardInput: .null, standardOutput: .descriptor(log),
        standardError: .descriptor(log))
      processes.withLock { $0[index] = child }
    } catch {
      throw .failed("cannot start nats-server: \(error)")
    }
  }

  private func waitUntilListening(_ index: Int) async throws(LANError) {
    let port = plan.clientPorts[index]
    let up = await ProcessTable.waitUntil(.seconds(10)) { Self.accepts(port: port) }
    guard up else {
      throw .failed("nats-server n\(index + 1) did not listen on port \(port) within 10 s\n" + LabFiles.tail(plan.directory + "/n\(index + 1).log"))
    }
  }

  /// SIGKILLs node `index` (a crash): its clients fail over to the others.
  public func kill(_ index: Int) async {
    let child = processes.withLock { processes -> ChildProcess? in
      defer { processes[index] = nil }
      return processes[index]
    }
    child?.terminate(SIGKILL)
    await child?.wait()
  }

  /// Starts node `index` again (with its store) and waits until it listens.
  public func restart(_ index: Int) async throws(LANError) {
    await kill(index)
    try launch(index)
    try await waitUntilListening(index)
  }

  /// Stops every node (SIGTERM, then SIGKILL after 5 s) and removes their files.
  public func stop() async {
    let children = processes.withLock { processes -> [ChildProcess] in
      defer { processes = processes.map { _ in nil } }
      return processes.compactMap { $0 }
    }
    for child in children { child.terminate(SIGTERM) }
    for child in children {
      let done = await ProcessTable.waitUntil(.seconds(5)) { child.exitStatus != nil }
      if !done { child.terminate(SIGKILL) }
      await child.wait()
    }
    LabFiles.removeTree(plan.directory)
  }

  /// The last lines of node `index`'s log (for a failure message).
  public func logTail(_ index: Int) -> String { LabFiles.tail(plan.directory + "/n\(index + 1).log") }

  /// A port nothing listens on now (bound, read, released).
  static func freePort() throws(LANError) -> UInt16 {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw .failed("socket: \(String(cString: strerror(errno)))") }
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = 0
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) } }
    guard bound == 0 else { throw .failed("bind: \(String(cString: strerror(errno)))") }
    let named = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
    guard named == 0 else { throw .failed("getsockname: \(String(cString: strerror(errno)))") }
    return UInt16(bigEndian: address.sin_port)
  }

  /// Whether something accepts TCP connections on 127.0.0.1:`port`.
  static func accepts(port: UInt16) -> Bool {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { return false }
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = port.bigEndian
    let connected = withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    return connected == 0
  }
}
