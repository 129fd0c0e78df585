import Foundation
import NearbyCore
import NearbyCrypto
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

/// Every packet on this network namespace's interfaces, from a raw `AF_PACKET` socket (root
/// in the test namespace), until ``stop(ports:)``.
final class PacketCapture: @unchecked Sendable {
  private let fd: Int32
  private let packets = Mutex<[[UInt8]]>([])
  private let running = Atomic<Bool>(true)
  private let done = DispatchSemaphore(value: 0)

  init() throws {
    // ETH_P_ALL (0x0003) in network order.
    fd = socket(AF_PACKET, Int32(SOCK_RAW.rawValue), Int32(UInt16(0x0003).bigEndian))
    guard fd >= 0 else {
      throw SecureTestPeerError("a raw packet socket needs root (CAP_NET_RAW), as scripts/test runs the tests: errno \(errno)")
    }
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

  /// Stops, and returns the TCP payloads of the packets to or from `ports` (IPv4 and IPv6 on
  /// Ethernet-framed loopback).
  func stop(ports: [UInt16]) -> [[UInt8]] {
    running.store(false, ordering: .releasing)
    done.wait()
    return packets.withLock { $0 }.compactMap { Self.tcpPayload($0, ports: Set(ports)) }
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
