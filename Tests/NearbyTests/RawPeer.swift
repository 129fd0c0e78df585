import Foundation
import Nearby
import NearbyCore
import NearbyTestSupport

#if canImport(Glibc)
  import Glibc
#endif

/// A hand-driven peer on a blocking socket: sends whatever bytes a test wants.
final class RawPeer: @unchecked Sendable {
  let fd: Int32

  /// - Parameter receiveBuffer: a small `SO_RCVBUF` (set before connecting, so it bounds the
  ///   TCP window) makes a peer that does not read fill its sender's queue quickly.
  init(port: UInt16, receiveBuffer: Int32? = nil) throws {
    fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    if var size = receiveBuffer { setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size)) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = port.bigEndian
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    let result = withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    guard result == 0 else { throw WaitError(description: "connect failed: errno \(errno)") }
    var timeout = timeval(tv_sec: 8, tv_usec: 0)
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
  }

  deinit { close(fd) }

  func write(_ bytes: [UInt8]) {
    _ = bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
  }

  func write(_ frame: Frame) { write(FrameEncoder.encode(frame)) }

  func shutdownWrite() { shutdown(fd, Int32(SHUT_WR)) }

  /// Reads frames until EOF or the receive timeout, off the cooperative pool.
  func readUntilClosed() async -> (frames: [Frame], closed: Bool) {
    await withCheckedContinuation { continuation in
      Thread.detachNewThread { [self] in
        let decoder = FrameDecoder()
        var frames: [Frame] = []
        var closed = false
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
          let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
          if count == 0 {
            closed = true
            break
          }
          if count < 0 { break }
          decoder.append(buffer[0..<count])
          while let frame = try? decoder.next() { frames.append(frame) }
        }
        continuation.resume(returning: (frames, closed))
      }
    }
  }
}

/// Completes the handshake and an accepted invitation, then says nothing more (a pulled cable).
final class SilentPeer: @unchecked Sendable {
  let raw: RawPeer

  init(connectingTo port: UInt16) throws {
    raw = try RawPeer(port: port)
    let peer = Peer(id: PeerID.random(), name: try DisplayName("silent"))
    raw.write(.hello(Frame.Hello(peer: peer)))
    raw.write(.invite(Frame.Invite(invitationID: 1, timeoutMilliseconds: 5000, context: [])))
  }
}
