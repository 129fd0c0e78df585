import Foundation
import NearbyCore
import NearbyCrypto
import NearbyLab
import NearbyTestSupport
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// A man in the middle on loopback: it accepts a connection as a responder with a key of its
/// own, dials the real peer as an initiator with that key too, and passes frames both ways
/// (decrypting and re-encrypting them), so that both ends reach `connected`.
final class MiddleListener: @unchecked Sendable {
  let fd: Int32
  let port: UInt16
  let identity = SecureTestPeer.makeIdentity()

  init() throws { (fd, port) = try LoopbackSocket.listening(backlog: 4) }

  deinit { close(fd) }

  struct Codes: Sendable {
    let towardAlice: String
    let towardBob: String
  }

  /// Accepts one connection, dials `bobPort`, and relays. - Returns: the codes of both handshakes.
  func intercept(bobPort: UInt16, names: (toAlice: String, toBob: String)) async throws -> Codes {
    try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Codes, any Error>) in
      Thread.detachNewThread { [self] in
        do {
          let accepted = accept(fd, nil, nil)
          guard accepted >= 0 else { throw SecureTestPeerError("accept failed: errno \(errno)") }
          let aliceSide = SecureTestPeer(acceptedFD: accepted, identity: identity)
          try aliceSide.handshake(role: .responder, payload: SecureTestPeer.helloPayload(aliceSide.hello(name: names.toAlice)))
          let bobSide = try SecureTestPeer(port: bobPort, identity: identity)
          try bobSide.handshake(payload: SecureTestPeer.helloPayload(bobSide.hello(name: names.toBob)))
          let codes = Codes(
            towardAlice: aliceSide.result!.verificationCode.digits, towardBob: bobSide.result!.verificationCode.digits)
          Self.pump(from: aliceSide, to: bobSide)
          Self.pump(from: bobSide, to: aliceSide)
          continuation.resume(returning: codes)
        } catch {
          continuation.resume(throwing: error)
        }
      }
    }
  }

  private static func pump(from source: SecureTestPeer, to destination: SecureTestPeer) {
    Thread.detachNewThread {
      while true {
        let received = source.read { !$0.isEmpty }
        if !received.frames.isEmpty { destination.write(received.frames) }
        if received.closed || received.error != nil || received.frames.isEmpty { return }
      }
    }
  }
}

/// A capture of the TCP packets to and from some ports on loopback, with a raw packet socket
/// (root). The kernel filters the packets (a classic BPF program: IPv4 TCP, either port one
/// of ours), so that the traffic of the tests running beside it neither fills its buffer
/// nor is copied. (Under the parallel run's load, the unfiltered capture it replaces once saw
/// only 5 packets of a session: it may have lost some, which then went unchecked.)
final class PacketCapture: @unchecked Sendable {
  private let fd: Int32
  private let ports: Set<UInt16>
  private let packets = Mutex<[[UInt8]]>([])
  private let running = Atomic<Bool>(true)
  private let done = DispatchSemaphore(value: 0)

  /// What ``stop()`` returns: the TCP payloads, in order, and how many packets the kernel
  /// dropped because the buffer was full (any: the capture is incomplete).
  struct Result {
    var payloads: [[UInt8]]
    var dropped: UInt32
  }

  /// Captures IPv4 TCP packets whose source or destination port is one of `ports`.
  init(ports: [UInt16]) throws {
    precondition(!ports.isEmpty && ports.count <= 8, "one to eight ports")
    self.ports = Set(ports)
    // ETH_P_ALL (0x0003) in network order.
    fd = socket(AF_PACKET, Int32(SOCK_RAW.rawValue), Int32(UInt16(0x0003).bigEndian))
    guard fd >= 0 else {
      throw SecureTestPeerError("a raw packet socket needs root (CAP_NET_RAW), as scripts/test runs the tests: errno \(errno)")
    }
    var program = Self.filter(ports: ports)
    let attached = program.withUnsafeMutableBufferPointer { instructions -> Int32 in
      // struct sock_fprog { unsigned short len; struct sock_filter *filter; }
      let fprog = UnsafeMutableRawPointer.allocate(byteCount: 16, alignment: 8)
      defer { fprog.deallocate() }
      fprog.initializeMemory(as: UInt8.self, repeating: 0, count: 16)
      fprog.storeBytes(of: UInt16(instructions.count), as: UInt16.self)
      fprog.storeBytes(of: UnsafeMutableRawPointer(instructions.baseAddress!), toByteOffset: 8, as: UnsafeMutableRawPointer.self)
      return setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, fprog, 16)
    }
    guard attached == 0 else {
      close(fd)
      throw SecureTestPeerError("attaching the capture's packet filter failed: errno \(errno)")
    }
    // Packets queued between socket() and the filter are the other tests': drop them.
    var scratch = [UInt8](repeating: 0, count: 70_000)
    while (scratch.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }) > 0 {}
    var buffer = Int32(16 << 20)
    setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &buffer, socklen_t(MemoryLayout<Int32>.size))
    _ = Self.statistics(fd)  // reading them resets them
    var timeout = timeval(tv_sec: 0, tv_usec: 100_000)
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    Thread.detachNewThread { [self] in
      var buffer = [UInt8](repeating: 0, count: 70_000)
      while running.load(ordering: .acquiring) {
        let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        if count > 0 { packets.withLock { $0.append(Array(buffer[0..<count])) } }
      }
      done.signal()
    }
  }

  deinit { close(fd) }

  /// Stops, and returns the TCP payloads of the packets to or from the ports (IPv4 on
  /// Ethernet-framed loopback), and the kernel's count of packets dropped meanwhile.
  func stop() -> Result {
    running.store(false, ordering: .releasing)
    done.wait()
    // What the kernel holds and the thread did not read yet is checked too.
    var buffer = [UInt8](repeating: 0, count: 70_000)
    while true {
      let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
      guard count > 0 else { break }
      packets.withLock { $0.append(Array(buffer[0..<count])) }
    }
    let dropped = Self.statistics(fd).dropped
    return Result(payloads: packets.withLock { $0 }.compactMap { Self.tcpPayload($0, ports: ports) }, dropped: dropped)
  }

  /// `PACKET_STATISTICS` of linux/if_packet.h (Glibc does not export it).
  private static let packetStatistics: Int32 = 6

  /// `struct tpacket_stats` (PACKET_STATISTICS): packets received and dropped since the last read.
  private static func statistics(_ fd: Int32) -> (packets: UInt32, dropped: UInt32) {
    var counts: (UInt32, UInt32) = (0, 0)
    var length = socklen_t(MemoryLayout<(UInt32, UInt32)>.size)
    _ = getsockopt(fd, Int32(SOL_PACKET), Self.packetStatistics, &counts, &length)
    return counts
  }

  /// A classic BPF program, as `tcpdump -dd 'ip and tcp and (port A or port B)'` writes it
  /// (without the check for fragments: loopback does not fragment).
  static func filter(ports: [UInt16]) -> [(code: UInt16, jt: UInt8, jf: UInt8, k: UInt32)] {
    let n = ports.count
    // ld h [12]; jeq IPv4; ld b [23]; jeq TCP; ldx 4*([14]&0xf); ld h [x+14] (source);
    // n × jeq port; ld h [x+16] (destination); n × jeq port; ret 0; ret all.
    let load16 = UInt16(0x28)
    let load8 = UInt16(0x30)
    let loadX = UInt16(0xb1)
    let loadIndexed16 = UInt16(0x48)
    let jumpEqual = UInt16(0x15)
    let ret = UInt16(0x06)
    let total = 6 + n + 1 + n + 2
    let reject = total - 2
    let accept = total - 1
    var program: [(code: UInt16, jt: UInt8, jf: UInt8, k: UInt32)] = []
    func jumpTo(_ target: Int) -> UInt8 { UInt8(target - program.count - 1) }
    program.append((load16, 0, 0, 12))
    program.append((jumpEqual, 0, jumpTo(reject), 0x0800))
    program.append((load8, 0, 0, 23))
    program.append((jumpEqual, 0, jumpTo(reject), 6))
    program.append((loadX, 0, 0, 14))
    program.append((loadIndexed16, 0, 0, 14))
    for port in ports { program.append((jumpEqual, jumpTo(accept), 0, UInt32(port))) }
    program.append((loadIndexed16, 0, 0, 16))
    for port in ports { program.append((jumpEqual, jumpTo(accept), 0, UInt32(port))) }
    program.append((ret, 0, 0, 0))
    program.append((ret, 0, 0, 0x40000))
    precondition(program.count == total)
    return program
  }

  static func tcpPayload(_ frame: [UInt8], ports: Set<UInt16>) -> [UInt8]? {
    guard frame.count > 14 else { return nil }
    let ip = 14
    var tcp: Int
    switch frame[ip] >> 4 {
    case 4:
      guard frame.count > ip + 20, frame[ip + 9] == 6 else { return nil }
      tcp = ip + Int(frame[ip] & 0x0F) * 4
    case 6:
      guard frame.count > ip + 40, frame[ip + 6] == 6 else { return nil }
      tcp = ip + 40
    default:
      return nil
    }
    guard frame.count >= tcp + 20 else { return nil }
    let source = UInt16(frame[tcp]) << 8 | UInt16(frame[tcp + 1])
    let destination = UInt16(frame[tcp + 2]) << 8 | UInt16(frame[tcp + 3])
    guard ports.contains(source) || ports.contains(destination) else { return nil }
    let offset = tcp + Int(frame[tcp + 12] >> 4) * 4
    return offset < frame.count ? Array(frame[offset...]) : []
  }
}
