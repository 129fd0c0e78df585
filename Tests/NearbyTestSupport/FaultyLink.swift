import Foundation
import NearbyLab
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// A TCP relay on `127.0.0.1` in front of a listener, that a test can break: it forwards the
/// bytes of every connection made to it until told to drop them (a partition: nothing gets
/// through, new connections are accepted and then hear nothing) or to cut every connection
/// (a link reset). Each connection is pumped by a thread of its own, never by Swift's
/// cooperative pool.
public final class FaultyLink: Sendable {
  public enum Mode: Sendable, Equatable {
    /// Bytes go through.
    case pass
    /// Bytes are read and dropped, both ways; new connections are accepted and dropped too.
    /// The end of a connection does not get through either: when one side closes it, the
    /// other side's stays open, and hears nothing, until the link is cut or stopped (as when a
    /// peer moved to another path and the old one went dark), also after the partition.
    case partition
  }

  public let port: UInt16
  private let target: UInt16
  private let listener: Int32
  /// Descriptors are shut down and closed only under this lock, and only while listed
  /// here: a descriptor is a number the kernel gives to the next socket as soon as it is
  /// closed, in any test of this process. `cutAll()` used to shut down a snapshot outside
  /// the lock while pumps closed theirs, so a number it shut down could belong to another
  /// test's connection by then (whose peer then saw its stream end without a CLOSE record).
  private struct State {
    var mode = Mode.pass
    var pairs: [(Int32, Int32)] = []
    var listenerOpen = true
    var stopped = false
    var accepted = 0
    var endsHeldBack = 0
  }
  private let state = Mutex(State())

  /// Listens on an ephemeral port of 127.0.0.1 and forwards to `127.0.0.1:target`.
  public init(forwardingTo target: UInt16) throws {
    self.target = target
    (listener, port) = try LoopbackSocket.listening(backlog: 64, reuseAddress: true)
    let thread = Thread { [self] in acceptLoop() }
    thread.name = "faulty-link-accept"
    thread.start()
  }

  /// How many connections were made through the link.
  public var acceptedConnections: Int { state.withLock { $0.accepted } }

  /// How many times one side of a connection ended during a partition and the link held
  /// that back from the other side. A test that heals the link after a peer gave up a
  /// connection waits for this first: an end the link reads only after the heal is passed on.
  public var endsHeldBack: Int { state.withLock { $0.endsHeldBack } }

  /// Lets bytes through, or drops them.
  public func set(_ mode: Mode) { state.withLock { $0.mode = mode } }

  /// Closes every connection now (both ends see the stream end or a reset).
  public func cutAll() {
    state.withLock { state in
      // Still open: a pump closes its pair only after taking it out of the list.
      for (a, b) in state.pairs {
        shutdown(a, Int32(SHUT_RDWR))
        shutdown(b, Int32(SHUT_RDWR))
      }
      state.pairs = []
    }
  }

  /// Stops accepting and cuts everything.
  public func stop() {
    state.withLock { state in
      state.stopped = true
      if state.listenerOpen { shutdown(listener, Int32(SHUT_RDWR)) }
    }
    cutAll()
  }

  private func acceptLoop() {
    defer {
      state.withLock { state in
        state.listenerOpen = false
        close(listener)
      }
    }
    while true {
      let client = accept(listener, nil, nil)
      if client < 0 {
        if errno == EINTR { continue }
        return
      }
      if state.withLock({ $0.stopped }) {
        close(client)
        return
      }
      let server = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
      var address = LoopbackSocket.address(port: target)
      let connected = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(server, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
      }
      guard connected == 0 else {
        close(client)
        close(server)
        continue
      }
      state.withLock {
        $0.pairs.append((client, server))
        $0.accepted += 1
      }
      let thread = Thread { [self] in pump(client, server) }
      thread.name = "faulty-link-pump"
      thread.start()
    }
  }

  /// Copies bytes both ways (or drops them in a partition) until either side ends, or in a
  /// partition until both have: a side that ended then is not passed on (see ``Mode/partition``).
  private func pump(_ a: Int32, _ b: Int32) {
    defer {
      state.withLock { state in
        state.pairs.removeAll { $0.0 == a }
        close(a)
        close(b)
      }
    }
    var fds = [pollfd(fd: a, events: Int16(POLLIN), revents: 0), pollfd(fd: b, events: Int16(POLLIN), revents: 0)]
    var ended = [false, false]
    var buffer = [UInt8](repeating: 0, count: 65_536)
    while true {
      let ready = poll(&fds, 2, 200)
      if ready < 0 && errno != EINTR { return }
      if state.withLock({ $0.stopped }) { return }
      for index in 0..<2 where fds[index].revents != 0 {
        let from = index == 0 ? a : b
        let to = index == 0 ? b : a
        let count = buffer.withUnsafeMutableBytes { read(from, $0.baseAddress, $0.count) }
        let passing = state.withLock({ $0.mode }) == .pass
        if count <= 0 {
          // Passed on (both close) unless the link is partitioned and the other side still
          // open: then that side hears nothing more (poll ignores a negative descriptor).
          if passing || ended[1 - index] { return }
          ended[index] = true
          state.withLock { $0.endsHeldBack += 1 }
          fds[index].fd = -1
          continue
        }
        guard passing, !ended[1 - index] else { continue }
        var sent = 0
        while sent < count {
          let written = buffer.withUnsafeBytes { send(to, $0.baseAddress! + sent, count - sent, Int32(MSG_NOSIGNAL)) }
          if written <= 0 { return }
          sent += written
        }
      }
    }
  }
}
