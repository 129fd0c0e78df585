#if canImport(Glibc)
  import Glibc
#endif

extension LANHarness {
  /// Injects a network fault into LAN `id` (`lan fault ID ...`): packet loss and partitions
  /// as an nftables table in each host concerned (``HostFaults``), links down or up with
  /// `ip link`, a rate limit with `tc` tbf on both ends of the host's veth links (so it holds
  /// for what the host sends and for what it receives), or the host's avahi-daemon.
  /// - Throws: ``LANError``: usage for a process fault (`nearby lab` does those) or a host
  ///   the LAN does not have; a failure with the tool's output when a command fails (exit 3
  ///   when `nft` or `tc` are missing).
  public func inject(_ fault: FaultAction, into id: String) async throws(LANError) {
    let topology = try self.topology(id)
    for name in fault.hosts where topology.host(name) == nil {
      throw .usage("LAN '\(id)' has no host '\(name)' (hosts: \(topology.hosts.map(\.name).joined(separator: " ")))")
    }
    func addresses(_ hosts: [String]) -> Set<String> {
      Set(hosts.compactMap { topology.host($0) }.flatMap { $0.links.map(\.address) })
    }
    switch fault {
    case .loss(let host, let percent):
      try await update(topology, [host]) { $0.lossPercent = percent }
    case .partition(let one, let other):
      try await update(topology, one) { $0.cut.formUnion(addresses(other)) }
      try await update(topology, other) { $0.cut.formUnion(addresses(one)) }
    case .heal(let one, let other):
      try await update(topology, one) { $0.cut.subtract(addresses(other)) }
      try await update(topology, other) { $0.cut.subtract(addresses(one)) }
    case .healAll:
      try await update(topology, topology.hosts.map(\.name)) { $0.cut = [] }
    case .link(let name, let up, let segment):
      let host = topology.host(name)!
      if let segment, !host.links.contains(where: { $0.segment == segment }) {
        throw .usage("host '\(name)' is not on segment \(segment) (it is on \(host.links.map { String($0.segment) }.joined(separator: ", ")))")
      }
      for link in host.links where segment == nil || link.segment == segment {
        _ = try await run("ip", ["-n", host.namespace, "link", "set", link.interface, up ? "up" : "down"])
      }
    case .rate(let name, let rate):
      try tools.require(["tc"])
      let host = topology.host(name)!
      for link in host.links {
        try await limit(namespace: host.namespace, interface: link.interface, rate)
        try await limit(namespace: topology.bridgeNamespace, interface: link.bridgePort, rate)
      }
    case .avahi(let host, let action):
      try await avahi(.host(id: id, host: host), action)
    case .pause, .resume, .kill, .restart:
      throw .usage("\(fault.description.split(separator: " ")[0]) acts on a host's process: nearby lab does that (in a faults file), not the harness")
    }
  }

  /// The plan of an existing LAN, worked out again from its `segments` file.
  func topology(_ id: String) throws(LANError) -> LANTopology {
    try LANTopology.validateID(id)
    guard let text = LabFiles.read(LANStateLayout.lanDirectory(id) + "/segments") else { throw .failed("no LAN '\(id)' (see: lan list)") }
    return try LANTopology(id: id, segments: LANStateLayout.segments(text).map { $0.joined(separator: ",") })
  }

  /// Changes the packet faults of `hosts` and applies them (`nft -f` inside each host).
  private func update(_ topology: LANTopology, _ hosts: [String], _ change: (inout HostFaults) -> Void) async throws(LANError) {
    try tools.require(["nft", "nsenter"])
    for name in hosts {
      guard let host = topology.host(name) else { continue }
      let directory = host.directory(topology.id)
      var faults = HostFaults(text: LabFiles.read(directory + "/faults") ?? "")
      change(&faults)
      try LabFiles.write(faults.nftablesScript, to: directory + "/faults.nft")
      let path = LANStateLayout.namespacePath(host.namespace)
      _ = try await run("nsenter", ["--net=\(path)", "--", tools.path("nft"), "-f", directory + "/faults.nft"])
      try LabFiles.write(faults.text, to: directory + "/faults")
    }
  }

  /// Sets or removes a tbf rate limit on an interface (removing one that is not there is fine).
  private func limit(namespace: String, interface: String, _ rate: FaultAction.Rate?) async throws(LANError) {
    let arguments = ["-n", namespace] + HostFaults.rateArguments(interface: interface, rate: rate)
    trace([tools.path("tc")] + arguments)
    let result = await LabProcess.capture([tools.path("tc")] + arguments)
    if result.code != 0 && !(rate == nil && (result.output.contains("handle of zero") || result.output.contains("No such file"))) {
      throw .failed("tc \(arguments.joined(separator: " ")) failed (exit \(result.code)): \(result.output)")
    }
  }
}
