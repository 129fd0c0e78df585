import CNearbySystem
import Foundation
import NearbyLab

#if canImport(Glibc)
  import Glibc
#endif

/// Measures what the network between two hosts of a LAN lets through, with sockets made
/// inside the hosts' namespaces (a helper thread joins a namespace to create each one): the
/// count of UDP datagrams that arrive, whether TCP connects, how long a transfer takes. Its
/// blocking calls run on threads of their own, never on the test's cooperative pool.
enum NetworkProbe {
  /// A socket of host `host` (its network namespace).
  static func socket(in host: LANHost, _ type: Int32) -> Int32 {
    nearby_socket_in_netns("/run/netns/" + host.namespace, AF_INET, type)
  }

  static func address(_ text: String, port: UInt16) -> sockaddr_in {
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = port.bigEndian
    inet_pton(AF_INET, text, &address.sin_addr)
    return address
  }

  /// Binds `fd` to `ip` port 0 and returns the port it got.
  static func bind(_ fd: Int32, _ ip: String) -> UInt16 {
    var local = address(ip, port: 0)
    _ = withUnsafePointer(to: &local) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    _ = withUnsafeMutablePointer(to: &local) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
    return UInt16(bigEndian: local.sin_port)
  }

  /// Whether `fd` becomes readable (or writable) within `milliseconds`.
  static func ready(_ fd: Int32, write: Bool = false, milliseconds: Int32) -> Bool {
    var descriptor = pollfd(fd: fd, events: Int16(write ? POLLOUT : POLLIN), revents: 0)
    return poll(&descriptor, 1, milliseconds) == 1
  }

  /// Sends `count` datagrams from `from` to `to`'s first address and counts those that arrive
  /// (waiting until none has come for 300 ms).
  static func datagramsDelivered(_ count: Int, from: LANHost, to: LANHost) async -> Int {
    await offPool {
      let receiver = socket(in: to, Int32(SOCK_DGRAM.rawValue))
      let sender = socket(in: from, Int32(SOCK_DGRAM.rawValue))
      defer {
        close(receiver)
        close(sender)
      }
      guard receiver >= 0, sender >= 0 else { return -1 }
      var size: Int32 = 4 << 20
      setsockopt(receiver, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
      let port = bind(receiver, to.addresses[0].address)
      var target = address(to.addresses[0].address, port: port)
      var received = 0
      var buffer = [UInt8](repeating: 0, count: 64)
      for index in 0..<count {
        var payload = UInt32(index)
        _ = withUnsafePointer(to: &target) { target in
          target.withMemoryRebound(to: sockaddr.self, capacity: 1) { sendto(sender, &payload, 4, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        if index % 50 == 49 { usleep(2000) }  // keep the queues short: only the fault may drop
      }
      while ready(receiver, milliseconds: 300) {
        if recv(receiver, &buffer, buffer.count, 0) > 0 { received += 1 }
      }
      return received
    }
  }

  /// A TCP connection from `from` to a listener on `to`; nil if it is not established
  /// within `milliseconds`.
  static func connect(from: LANHost, to: LANHost, milliseconds: Int32) async -> (client: Int32, server: Int32)? {
    let pair = await offPool { () -> [Int32] in
      let listener = socket(in: to, Int32(SOCK_STREAM.rawValue))
      let client = socket(in: from, Int32(SOCK_STREAM.rawValue))
      defer { close(listener) }
      let port = bind(listener, to.addresses[0].address)
      listen(listener, 4)
      _ = nearby_set_nonblocking(client)
      var target = address(to.addresses[0].address, port: port)
      _ = withUnsafePointer(to: &target) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(client, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
      }
      var error: Int32 = 0
      var length = socklen_t(MemoryLayout<Int32>.size)
      guard ready(client, write: true, milliseconds: milliseconds), getsockopt(client, SOL_SOCKET, SO_ERROR, &error, &length) == 0, error == 0,
        ready(listener, milliseconds: 1000)
      else {
        close(client)
        return []
      }
      let flags = fcntl(client, F_GETFL)
      _ = fcntl(client, F_SETFL, flags & ~O_NONBLOCK)
      return [client, accept(listener, nil, nil)]
    }
    return pair.count == 2 ? (pair[0], pair[1]) : nil
  }

  /// Whether `text` sent on `client` arrives on `server` within `milliseconds`.
  static func arrives(_ text: String, from client: Int32, at server: Int32, milliseconds: Int32) async -> Bool {
    await offPool {
      _ = Array(text.utf8).withUnsafeBytes { send(client, $0.baseAddress, $0.count, 0) }
      guard ready(server, milliseconds: milliseconds) else { return false }
      var buffer = [UInt8](repeating: 0, count: 256)
      let count = recv(server, &buffer, buffer.count, 0)
      return count > 0 && String(decoding: buffer[0..<count], as: UTF8.self).contains(text)
    }
  }

  /// How long `bytes` take from `client` to `server`.
  static func transfer(_ bytes: Int, from client: Int32, to server: Int32) async -> Duration {
    await offPool {
      let started = ContinuousClock.now
      let writer = Thread {
        let chunk = [UInt8](repeating: 7, count: 16384)
        var sent = 0
        while sent < bytes {
          let count = chunk.withUnsafeBytes { send(client, $0.baseAddress, min($0.count, bytes - sent), 0) }
          if count <= 0 { break }
          sent += count
        }
      }
      writer.start()
      var received = 0
      var buffer = [UInt8](repeating: 0, count: 65536)
      while received < bytes, ready(server, milliseconds: 30000) {
        let count = recv(server, &buffer, buffer.count, 0)
        if count <= 0 { break }
        received += count
      }
      return ContinuousClock.now - started
    }
  }

  /// Runs `body` on a thread of its own.
  static func offPool<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
      Thread.detachNewThread { continuation.resume(returning: body()) }
    }
  }
}
